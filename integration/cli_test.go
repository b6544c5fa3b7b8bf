package integration

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCLIExitStatus: the built binary as a shell sees it. Help that is
// asked for goes to stdout with exit status 0; no command or an unknown
// one prints the usage to stderr with exit status 2; a failing command
// exits 1.
func TestCLIExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the binary TestMain builds")
	}
	for _, r := range []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{nil, 2, "", "usage: zfuse COMMAND"},
		{[]string{"--help"}, 0, "usage: zfuse COMMAND", ""},
		{[]string{"help", "mount"}, 0, "-readahead", ""},
		{[]string{"--version"}, 0, "zfuse ", ""},
		{[]string{"mount", "/nonexistent"}, 2, "", "mount takes 2 arguments, got 1"},
		{[]string{"info", "/nonexistent"}, 1, "", "zfuse: open store"},
	} {
		stdout, stderr, err := run(r.args...)
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != r.code || !strings.Contains(string(stdout), r.stdout) || !strings.Contains(string(stderr), r.stderr) ||
			(r.stdout == "") != (len(stdout) == 0) || (r.stderr == "") != (len(stderr) == 0) {
			t.Errorf("zfuse %q: exit %d, want %d\nstdout %q\nstderr %q", r.args, code, r.code, stdout, stderr)
		}
	}
}
