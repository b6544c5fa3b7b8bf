package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/zfuse/zfuse/daemon"
)

// zfuse mount --background runs the mount in a child process (package
// daemon) and returns once it is ready. This file is its flags, and the
// log of every command serving a tree: --log-file, else syslog in the
// background child, else stderr.

// backgroundFlags are the flags for running as a daemon.
type backgroundFlags struct {
	background bool
	logFile    string
}

// addLogFileFlag defines --log-file, which every command serving a tree
// takes.
func addLogFileFlag(fl *flag.FlagSet) *backgroundFlags {
	f := &backgroundFlags{}
	fl.StringVar(&f.logFile, "log-file", "", "append the log to this file instead of stderr (or syslog, when in the background)")
	return f
}

// addBackgroundFlags defines --background and -d, zfuse mount's.
func (f *backgroundFlags) addBackgroundFlags(fl *flag.FlagSet) {
	fl.Var((*boolFlag)(&f.background), "background", "mount: return once the mount is ready (exit 0), or with the reason it failed, and serve it from a process in the background; logs go to --log-file, else syslog/the journal")
	fl.Var((*boolFlag)(&f.background), "d", "the same as --background")
}

// openLog returns the logger of a command: to --log-file if given; else,
// in a background child, to syslog (or nowhere, with a warning to the
// parent, if there is no syslog); else to stderr. close closes the file.
func openLog(stderr io.Writer, level slog.Level, f *backgroundFlags, child *daemon.Pipe) (log *slog.Logger, close func(), err error) {
	opts := &slog.HandlerOptions{Level: level}
	switch {
	case f.logFile != "":
		lf, err := os.OpenFile(f.logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		return slog.New(slog.NewTextHandler(lf, opts)), func() { lf.Close() }, nil
	case child != nil:
		h, closeSyslog, err := daemon.Syslog(opts)
		if err != nil {
			child.Warn(fmt.Sprintf("no syslog to log to (%v): the background mount logs nothing; give it --log-file", err))
			return slog.New(slog.DiscardHandler), func() {}, nil
		}
		return slog.New(h), closeSyslog, nil
	}
	return slog.New(slog.NewTextHandler(stderr, opts)), func() {}, nil
}
