package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

func TestRun(t *testing.T) {
	src := t.TempDir()
	write := storeWriter(t, src)
	write(".zgroup", `{"zarr_format": 2}`)
	write("a/.zarray", `{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|u1",
		"compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	write("a/0", "\x01\x02")
	write("a/1", "\x03\x00")
	write("b/.zarray", `{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|u1",
		"compressor": null, "fill_value": 9, "order": "C", "filters": null}`)
	write("b/0", "\x01\x02")
	checkRuns(t, []runCase{
		{[]string{"version"}, "zfuse ", ""},
		{[]string{"cat", src, "a/1"}, "\x03\x00", ""},
		{[]string{"cat", src, "a/.zarray"}, `"compressor": null`, ""},
		{[]string{"cat", src, "../etc/passwd"}, "", "refused"},
		{[]string{"cat", src, "/etc/passwd"}, "", "refused"},
		{[]string{"cat", src, "a/7"}, "", "no such file"},
		{[]string{"cat", src, "b/1"}, "", "the chunk is not stored, and readers read it as the array's fill value"},
		{[]string{"cat", src, "a"}, "", "directory"},
		{[]string{"cat", filepath.Join(src, "nope"), "a/0"}, "", "no such file"},
		{[]string{"info", src}, "a v2 3 2 - |u1 none none: stored uncompressed 2 chunks, 4 B 1.00 raw", ""},
		{[]string{"info", "--log-level", "loud", src}, "", "-log-level: want debug, info, warn or error"},
		{[]string{"cat", "--cache", "lots", src, "a/0"}, "", "invalid size"},
		{[]string{"cat", src}, "", "takes 2 arguments"},
		{[]string{"frobnicate"}, "", "unknown command"},
		{nil, "", "no command"},
	})
}

// A runCase is a zfuse command line and what it must print, or fail with.
type runCase struct {
	args    []string
	stdout  string // substring of stdout (info: with columns joined by one space)
	wantErr string // substring of the error or stderr
}

// checkRuns runs each case through run and checks its output or error.
func checkRuns(t *testing.T, cases []runCase) {
	t.Helper()
	for _, r := range cases {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), r.args, &stdout, &stderr)
		if r.wantErr != "" {
			if err == nil || !strings.Contains(err.Error()+stderr.String(), r.wantErr) {
				t.Errorf("zfuse %q: err %v, want %q", r.args, err, r.wantErr)
			}
			continue
		}
		out := stdout.String()
		if r.args[0] == "info" {
			out = strings.Join(strings.Fields(out), " ") // columns, not their widths
		}
		if err != nil || !strings.Contains(out, r.stdout) {
			t.Errorf("zfuse %q: %v\nstdout %q\nwant %q\nstderr %s", r.args, err, stdout.String(), r.stdout, stderr.String())
		}
	}
}

// storeWriter returns a function that writes data at key (a "/" path)
// under dir, making its directories.
func storeWriter(t testing.TB, dir string) func(key, data string) {
	return func(key, data string) { testutil.WriteFile(t, dir, key, []byte(data)) }
}
