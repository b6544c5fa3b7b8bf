package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestUsage: zfuse as a Unix tool. Help that is asked for goes to stdout
// with exit status 0; a command line zfuse does not run gets what is wrong
// and the usage on stderr with exit status 2, and nothing on stdout; a
// command that fails exits 1.
func TestUsage(t *testing.T) {
	missing := t.TempDir() + "/absent"
	empty, mp := t.TempDir(), t.TempDir()
	src := t.TempDir()
	storeWriter(t, src)("a/.zarray", `{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|u1",
		"compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	dest := t.TempDir() + "/out.zarr"
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
		{[]string{"info", "--log-level", "loud", missing}, 2, "", "-log-level: want debug, info, warn or error"},
		// Every bad flag value is bad usage, said where it is parsed.
		{[]string{"info", "--log-level", "verbose", missing}, 2, "", "want debug, info, warn or error\nusage: zfuse info"},
		{[]string{"compress", "--codec", "zstdd", missing, dest}, 2, "", `unknown codec "zstdd"`},
		{[]string{"compress", "--codec", "zstd:high", missing, dest}, 2, "", `"high" is not a number`},
		{[]string{"compress", "--format", "v4", missing, dest}, 2, "", "-format: want v2, v3 or keep"},
		{[]string{"compress", "--chunks", "abc", missing, dest}, 2, "", `"abc" is not a shape`},
		{[]string{"compress", "--shard", "-1x2", missing, dest}, 2, "", "-shard"},
		{[]string{"compress", "--progress", "bogus", missing, dest}, 2, "", "-progress: want auto, bar, plain or none"},
		{[]string{"compress", "--encoder", "tpu", missing, dest}, 2, "", "-encoder: want auto, cpu or gpu"},
		{[]string{"compress", "--workers", "0", missing, dest}, 2, "", "-workers: want a whole number, 1 or more"},
		{[]string{"compress", "--format", "v2", "--shard", "2x2", missing, dest}, 2, "", "Zarr v2 has no sharding"},
		{[]string{"compress", "--verify=maybe", missing, dest}, 2, "", "-verify: want true or false"},
		{[]string{"mount", "-o", "as_v2=yes", missing, mp}, 2, "", "mount option as_v2=yes: want as_v2 alone, or as_v2=true or false"},
		{[]string{"mount", "-o", "workers=many", missing, mp}, 2, "", "mount option workers=many: want a whole number"},
		{[]string{"mount", "--http-timeout", "5", missing, mp}, 2, "", "-http-timeout: want a duration such as 30s"},
		{[]string{"warmup", "--jobs", "0", mp}, 2, "", "-jobs: want a whole number, 1 or more"},
		{[]string{"bench", "--runs", "0"}, 2, "", "-runs: want a whole number, 1 or more"},
		{[]string{"bench", "--readers", "files-grid,nosuch"}, 2, "", "-readers: want files-grid, files-list, files-py, cat, zarr, dask, xarray, loader, zarr-http, npy, npy-map or netcdf"},
		{[]string{"bench", "--chunks", "3MiB"}, 2, "", "-chunks"},
		{[]string{"bench", "compress", "--rounds", "0"}, 2, "", "-rounds: want a whole number"},
		// Arguments: flags go first, and the count is said in English.
		{[]string{"mount", missing, mp, "--background"}, 2, "", "mount: flags go before the arguments (zfuse mount [flags] SOURCE MOUNTPOINT): --background came after"},
		{[]string{"info"}, 2, "", "info takes 1 argument, got 0"},
		// A --stats-file that cannot be written is refused at start, as --log-file is.
		{[]string{"mount", "--stats-file", missing + "/stats.json", src, mp}, 1, "", "--stats-file " + missing + "/stats.json: cannot write in " + missing},
		// Nothing found is no success.
		{[]string{"info", empty}, 1, "", "holds no Zarr array: no Zarr metadata"},
		{[]string{"mount", empty, mp}, 1, "", "holds no Zarr array"},
		{[]string{"compress", empty, dest}, 1, "", "holds no Zarr array"},
		{[]string{"bench", "extra"}, 2, "", "bench takes 0 arguments, got 1"},
		{[]string{"bench", "--size", "lots"}, 2, "", "usage: zfuse bench"},
		{[]string{"info", missing}, 1, "", "zfuse: open store"},
		{[]string{"cat", t.TempDir(), "nosuch"}, 1, "", "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		// A mount that is not refused would serve until its context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		code := exitStatus(&stderr, run(ctx, r.args, &stdout, &stderr))
		cancel()
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
		code := exitStatus(&stderr, run(context.Background(), []string{"help", c.name}, &stdout, &stderr))
		if c.name == "csi" {
			// The plugin's own binary, which is not beside the test's
			// (integration's TestCSIFlags reads its help).
			if code != 1 || !strings.Contains(stderr.String(), "zfuse-csi, beside zfuse") {
				t.Errorf("zfuse help csi without zfuse-csi: exit %d, stderr %q", code, stderr.String())
			}
			continue
		}
		if code != 0 || !strings.HasPrefix(stdout.String(), "usage: zfuse "+c.name) {
			t.Errorf("zfuse help %s: exit %d, stdout %q, stderr %q", c.name, code, stdout.String(), stderr.String())
		}
	}
}

// TestHelpListsOwnFlags: each command's help lists the flags it takes and
// no other: the mount's lifecycle flags are mount's alone; the memory
// plan, --serving and --transport mount's and info's.
func TestHelpListsOwnFlags(t *testing.T) {
	mountOnly := []string{"-background", "-d\t", "-metrics", "-stats-file", "-allow-other", "-allow-non-empty", "-refresh", "-kernel-readahead", "-cpu-profile"}
	planned := []string{"-serving", "-transport", "-memory-limit", "-allow-over-limit"}
	common := []string{"-as-v2", "-workers", "-decoder", "-cache-decoded", "-s3-endpoint", "-cache-dir", "-log-file", "-o "}
	for _, tc := range []struct {
		cmd      string
		has, not []string
	}{
		{"mount", append(append(mountOnly, planned...), common...), nil},
		{"info", append(planned, common...), mountOnly},
		{"cat", common, append(mountOnly, planned...)},
		{"compress", []string{"-s3-endpoint", "-http-timeout"}, []string{"-cache-dir", "-refresh"}},
	} {
		var stdout bytes.Buffer
		if err := run(context.Background(), []string{"help", tc.cmd}, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, f := range tc.has {
			if !strings.Contains(stdout.String(), "\n  "+f) {
				t.Errorf("zfuse help %s does not list %s", tc.cmd, f)
			}
		}
		for _, f := range tc.not {
			if strings.Contains(stdout.String(), "\n  "+f) {
				t.Errorf("zfuse help %s lists %s, which is not its flag", tc.cmd, f)
			}
		}
	}
}
