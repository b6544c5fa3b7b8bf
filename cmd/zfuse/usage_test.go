package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsage: zfuse as a Unix tool. Help that is asked for goes to stdout
// with exit status 0; a command line zfuse does not run gets what is wrong
// and the usage on stderr with exit status 2, and nothing on stdout; a
// command that fails exits 1.
func TestUsage(t *testing.T) {
	missing := t.TempDir() + "/absent"
	for _, r := range []struct {
		args   []string
		code   int
		stdout string // substring; "" means stdout must be empty
		stderr string // substring; "" means stderr must be empty
	}{
		{nil, 2, "", "usage: zfuse COMMAND"},
		{[]string{"-h"}, 0, "usage: zfuse COMMAND", ""},
		{[]string{"-help"}, 0, "usage: zfuse COMMAND", ""},
		{[]string{"--help"}, 0, "usage: zfuse COMMAND", ""},
		{[]string{"help"}, 0, "  mount [flags] SOURCE MOUNTPOINT ", ""},
		{[]string{"help", "mount"}, 0, "usage: zfuse mount [flags] SOURCE MOUNTPOINT", ""},
		{[]string{"help", "mount"}, 0, "-stats-file", ""},
		{[]string{"help", "cat"}, 0, "-as-v2", ""},
		{[]string{"help", "info"}, 0, "usage: zfuse info [flags] SOURCE", ""},
		{[]string{"help", "bench"}, 0, "-runs", ""},
		{[]string{"help", "version"}, 0, "usage: zfuse version", ""},
		{[]string{"help", "help"}, 0, "usage: zfuse help [COMMAND]", ""},
		{[]string{"mount", "-h"}, 0, "-readahead", ""},
		{[]string{"mount", "--help"}, 0, "-readahead", ""},
		{[]string{"bench", "-h"}, 0, "usage: zfuse bench [flags]", ""},
		{[]string{"info", "-h", missing}, 0, "usage: zfuse info", ""},
		{[]string{"version"}, 0, "zfuse ", ""},
		{[]string{"--version"}, 0, "zfuse ", ""},
		{[]string{"-version"}, 0, "zfuse ", ""},
		{[]string{"help", "nosuch"}, 2, "", `zfuse: help: unknown command "nosuch"`},
		{[]string{"help", "mount", "cat"}, 2, "", "help takes one command"},
		{[]string{"version", "x"}, 2, "", "usage: zfuse version"},
		{[]string{"frobnicate"}, 2, "", `zfuse: unknown command "frobnicate"` + "\nusage: zfuse COMMAND"},
		{[]string{"--frobnicate"}, 2, "", `unknown command "--frobnicate"`},
		{[]string{"mount"}, 2, "", "zfuse: mount takes 2 arguments, got 0\nusage: zfuse mount [flags] SOURCE MOUNTPOINT"},
		{[]string{"cat", missing}, 2, "", `Run "zfuse help cat" for its flags.`},
		{[]string{"info", "--nosuch", missing}, 2, "", "zfuse: info: flag provided but not defined: -nosuch"},
		{[]string{"info", "--workers", "many", missing}, 2, "", `invalid value "many" for flag -workers`},
		{[]string{"info", "--log-level", "loud", missing}, 2, "", "--log-level"},
		{[]string{"bench", "extra"}, 2, "", "bench takes 0 arguments, got 1"},
		{[]string{"bench", "--size", "lots"}, 2, "", "usage: zfuse bench"},
		{[]string{"info", missing}, 1, "", "zfuse: open store"},
		{[]string{"cat", t.TempDir(), "nosuch"}, 1, "", "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		code := exitStatus(&stderr, run(context.Background(), r.args, &stdout, &stderr))
		ok := func(got, want string) bool {
			return want == "" && got == "" || want != "" && strings.Contains(got, want)
		}
		if code != r.code || !ok(stdout.String(), r.stdout) || !ok(stderr.String(), r.stderr) {
			t.Errorf("zfuse %q: exit %d, want %d\nstdout %q, want %q\nstderr %q, want %q",
				r.args, code, r.code, stdout.String(), r.stdout, stderr.String(), r.stderr)
		}
	}
}

// TestUsageListsCommands: every command run accepts is in the usage, and
// each one's help works.
func TestUsageListsCommands(t *testing.T) {
	u := usage()
	for _, c := range commands {
		if !strings.Contains(u, "\n  "+c.name+" ") {
			t.Errorf("usage does not list %s:\n%s", c.name, u)
		}
		var stdout, stderr bytes.Buffer
		if code := exitStatus(&stderr, run(context.Background(), []string{"help", c.name}, &stdout, &stderr)); code != 0 ||
			!strings.HasPrefix(stdout.String(), "usage: zfuse "+c.name) {
			t.Errorf("zfuse help %s: exit %d, stdout %q, stderr %q", c.name, code, stdout.String(), stderr.String())
		}
	}
}
