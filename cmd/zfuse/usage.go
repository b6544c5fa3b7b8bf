package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// What zfuse says about its own use, as Unix tools do: asked for help
// (zfuse help [COMMAND], -h, --help), it prints to stdout and exits 0; run
// wrongly (no command, an unknown one, bad flags or arguments), it prints
// what is wrong and the usage to stderr and exits 2; a command that fails
// exits 1.

// A command is one zfuse command as the usage lists it.
type command struct {
	name, args, summary string
}

// commands are zfuse's commands, in the order the usage lists them.
var commands = []command{
	{"mount", "[flags] SOURCE MOUNTPOINT", "serve SOURCE at MOUNTPOINT, in the foreground, until SIGINT or SIGTERM"},
	{"cat", "[flags] SOURCE PATH", "print one file exactly as the mount serves it"},
	{"info", "[flags] SOURCE", "one line per array: how it is stored and how it is presented"},
	{"warmup", "[flags] MOUNTPOINT/PATH", "decode an array, a group or a slice into a mount's caches ahead of a job"},
	{"compress", "[flags] SOURCE DEST", "encode every array of SOURCE into a compressed Zarr store at DEST that every Zarr reader reads"},
	{"bench", "[flags]", "measure the mount against baselines on this machine"},
	{"csi", "[flags]", "serve the CSI node plugin that mounts zfuse volumes in Kubernetes pods (docs/kubernetes.md)"},
	{"version", "", "print the version"},
	{"help", "[COMMAND]", "print this help, or a command's flags"},
}

// commandNames are the names of commands, the words that are no SOURCE
// of the mount.fuse3 form (helperArgs).
func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// usage is the program's usage.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: zfuse COMMAND [flags] ARGS...\n\n" +
		"zfuse mounts a compressed Zarr store (v2 or v3) read-only and serves it as an uncompressed one.\n\n" +
		"commands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name)+1+len(c.args))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s   %s\n", width, strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	b.WriteString("\nSOURCE is a local directory (one store, or a directory holding several), an\n" +
		"http(s):// URL or s3://bucket/prefix. \"zfuse SOURCE MOUNTPOINT -o OPTIONS\", as mount.fuse3\n" +
		"runs it for fstab's type fuse.zfuse, is zfuse mount --background -o OPTIONS.\n" +
		`Run "zfuse help COMMAND" for a command's flags.` + "\n")
	return b.String()
}

// commandUsage is the usage of the command name: "usage: zfuse NAME ARGS"
// and what it does.
func commandUsage(name string) string {
	for _, c := range commands {
		if c.name == name {
			return fmt.Sprintf("usage: zfuse %s\n\n%s.\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
		}
	}
	return usage()
}

// A usageError is a command line zfuse does not run: exitStatus prints it
// with the usage and exits 2.
type usageError struct {
	err   error  // what is wrong; nil when the usage says it all (no command)
	usage string // printed after it
}

func (e *usageError) Error() string {
	if e.err == nil {
		return "no command"
	}
	return e.err.Error()
}

func (e *usageError) Unwrap() error { return e.err }

// badUsage is a usageError for the command name (the program's usage when
// name is ""), saying what is wrong.
func badUsage(name string, format string, args ...any) error {
	u := usage()
	if name != "" {
		u = commandUsage(name) + fmt.Sprintf("Run \"zfuse help %s\" for its flags.\n", name)
	}
	return &usageError{err: fmt.Errorf(format, args...), usage: u}
}

// parseFlags parses args with fl, the flags of the zfuse command fl
// names ("zfuse mount"), and checks that nargs arguments follow (any
// number when nargs < 0). Asked for help (-h, --help) it prints the
// command's usage and flags to stdout and returns flag.ErrHelp; bad flags
// or arguments give a usageError.
func parseFlags(fl *flag.FlagSet, args []string, nargs int, stdout io.Writer) error {
	name := strings.TrimPrefix(fl.Name(), "zfuse ")
	fl.SetOutput(io.Discard) // the flag package's own messages: ours say the same
	fl.Usage = func() {}
	err := fl.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fl.SetOutput(stdout)
		fmt.Fprintf(stdout, "%s\nflags (-name or --name):\n", commandUsage(name))
		fl.PrintDefaults()
		return flag.ErrHelp
	case err != nil:
		return badUsage(name, "%s: %w", name, err)
	case nargs >= 0 && fl.NArg() != nargs:
		return badUsage(name, "%s", argsError(name, nargs, fl.Args()))
	}
	return nil
}

// argsError says what is wrong with args, the arguments after the flags of
// the command name, which takes nargs: most often a flag after them (the
// flag package stops at the first argument, so the rest are arguments).
func argsError(name string, nargs int, args []string) string {
	for i, a := range args {
		if i > 0 && len(a) > 1 && a[0] == '-' {
			what := ""
			for _, c := range commands {
				if c.name == name {
					what = strings.TrimSpace(strings.TrimPrefix(c.args, "[flags]"))
				}
			}
			return fmt.Sprintf("%s: flags go before the arguments (zfuse %s [flags] %s): %s came after %s", name, name, what, a, strings.Join(args[:i], " "))
		}
	}
	return fmt.Sprintf("%s takes %d argument%s, got %d", name, nargs, plural(nargs), len(args))
}

// help is zfuse help [COMMAND]: the program's usage, or the command's with
// its flags (run answers CMD -h), on stdout.
func help(stdout io.Writer, args []string, cmdHelp func(cmd string) error) error {
	switch {
	case len(args) == 0:
		_, err := io.WriteString(stdout, usage())
		return err
	case len(args) > 1:
		return badUsage("help", "help takes one command, got %d", len(args))
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		if c.name == "help" || c.name == "version" {
			_, err := io.WriteString(stdout, commandUsage(c.name))
			return err
		}
		if err := cmdHelp(c.name); !errors.Is(err, flag.ErrHelp) {
			return err
		}
		return nil
	}
	return badUsage("", "help: unknown command %q", args[0])
}

// exitStatus reports err, run's result, on stderr and returns the exit
// status: 0 for none (help was printed when err is flag.ErrHelp), 2 for a
// usageError (printed with the usage), 1 for any other error.
func exitStatus(stderr io.Writer, err error) int {
	var u *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &u):
		if u.err != nil {
			fmt.Fprintf(stderr, "zfuse: %v\n", u.err)
		}
		io.WriteString(stderr, u.usage)
		return 2
	}
	fmt.Fprintln(stderr, "zfuse:", err)
	return 1
}
