package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRun: the plugin's command line, as zfuse csi passes it on: help on
// stdout (exit 0), a bad command line on stderr (exit 2), nothing served.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"-h"}, 0, "usage: zfuse csi [flags]", ""},
		{[]string{"--help"}, 0, "\n  as-v2=true|false\n", ""},
		{[]string{"--help"}, 0, "\n  background: the driver starts the server\n", ""},
		{nil, 2, "", "--node-id is required"},
		{[]string{"--node-id", "n", "extra"}, 2, "", "csi takes no arguments"},
		{[]string{"--nodeid", "n"}, 2, "", "flag provided but not defined: -nodeid"},
		{[]string{"--node-id", "n", "--log-level", "loud"}, 2, "", `--log-level "loud"`},
	} {
		var stdout, stderr bytes.Buffer
		code := exitStatus(&stderr, run(context.Background(), tc.args, &stdout, &stderr))
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.errs) ||
			(tc.stdout == "") != (stdout.Len() == 0) {
			t.Errorf("zfuse csi %q: exit %d, want %d\nstdout %q, want %q\nstderr %q, want %q",
				tc.args, code, tc.code, stdout.String(), tc.stdout, stderr.String(), tc.errs)
		}
	}
}
