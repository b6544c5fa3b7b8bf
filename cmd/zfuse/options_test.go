package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// mountFlagSet is a FlagSet with the flags of zfuse mount that have their
// own types (sizes, the decoder mode, repeatable lists, booleans), and -o.
func mountFlagSet() *flag.FlagSet {
	fl := flag.NewFlagSet("zfuse mount", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	var level levelFlag
	var asV2 boolFlag
	fl.Var(&level, "log-level", "")
	fl.Var(&asV2, "as-v2", "")
	addLoaderFlags(fl)
	sf := addSourceFlags(fl)
	sf.addDiskCacheFlags(fl)
	sf.addRefreshFlag(fl)
	addLogFileFlag(fl).addBackgroundFlags(fl)
	fl.Var(optionsFlag{fl}, "o", "")
	return fl
}

// values returns every flag's value but -o.
func values(fl *flag.FlagSet) map[string]string {
	m := map[string]string{}
	fl.VisitAll(func(f *flag.Flag) {
		if f.Name != "o" {
			m[f.Name] = f.Value.String()
		}
	})
	return m
}

// TestOptions: an -o string sets the flags exactly as the flags do, a later
// one winning; mount(8)'s generic options are ignored; unknown options,
// bad values and booleans given values they cannot take are errors.
func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts    []string // -o arguments
		flags   []string // the equivalent flags
		wantErr string
	}{
		{[]string{"ro,cache_decoded=2GiB"}, []string{"--cache-decoded", "2GiB"}, ""},
		{[]string{"as_v2,readahead=0,workers=3"}, []string{"--as-v2", "--readahead", "0", "--workers", "3"}, ""},
		{[]string{"decoder=cpu,cache_compressed=64MiB,kernel_readahead=4MiB"}, []string{"--decoder", "cpu", "--cache-compressed", "64MiB", "--kernel-readahead", "4MiB"}, ""},
		{[]string{"s3_endpoint=http://127.0.0.1:7070,s3_path_style,http_max_inflight=8"}, []string{"--s3-endpoint", "http://127.0.0.1:7070", "--s3-path-style", "--http-max-inflight", "8"}, ""},
		{[]string{"array=a,array=b/c"}, []string{"--array", "a", "--array", "b/c"}, ""},
		{[]string{`log_file=/tmp/a\,b.log`}, []string{"--log-file", "/tmp/a,b.log"}, ""},
		{[]string{"cache_dir=/var/cache/zfuse,cache_dir_size=100GiB"}, []string{"--cache-dir", "/var/cache/zfuse", "--cache-dir-size", "100GiB"}, ""},
		{[]string{"rw,nodev,nosuid,noatime,_netdev,nofail,x-systemd.automount,defaults,dev,suid"}, nil, ""},
		{[]string{"refresh=30s"}, []string{"--refresh", "30s"}, ""},
		{[]string{"refresh=-1s"}, nil, "mount option refresh"},
		{[]string{"refresh=soon"}, nil, "want a duration"},
		{[]string{"cache_decoded=1GiB", "cache_decoded=3GiB"}, []string{"--cache-decoded", "3GiB"}, ""},
		{[]string{"as_v2=false"}, []string{"--as-v2=false"}, ""},
		{[]string{"frobnicate=1"}, nil, `unknown mount option "frobnicate"`},
		{[]string{"o=x"}, nil, `unknown mount option "o"`},
		{[]string{"d"}, nil, `unknown mount option "d"`},
		{[]string{"cache_decoded=lots"}, nil, "invalid size"},
		{[]string{"cache_decoded"}, nil, "needs a value"},
		{[]string{"decoder=tpu"}, nil, "want auto, cpu or gpu"},
		{[]string{"as_v2=maybe"}, nil, "mount option as_v2"},
	} {
		t.Run(strings.Join(tc.opts, " "), func(t *testing.T) {
			got := mountFlagSet()
			var args []string
			for _, o := range tc.opts {
				args = append(args, "-o", o)
			}
			err := got.Parse(args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := mountFlagSet()
			if err := want.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			g, w := values(got), values(want)
			for name := range w {
				if g[name] != w[name] {
					t.Errorf("--%s is %q with -o, %q with the flags", name, g[name], w[name])
				}
			}
		})
	}
}

// TestEveryFlagIsAnOption: each flag of zfuse mount (as -h lists them) is
// reachable as an -o option: a bad value for it is refused by the flag
// itself, not as an unknown option.
func TestEveryFlagIsAnOption(t *testing.T) {
	var stdout bytes.Buffer
	run(context.Background(), []string{"mount", "-h"}, &stdout, io.Discard) // help goes to stdout
	names := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(stdout.String(), -1)
	if len(names) < 20 {
		t.Fatalf("mount -h lists %d flags:\n%s", len(names), stdout.String())
	}
	for _, m := range names {
		name := m[1]
		if len(name) == 1 { // -d, -o: no option of their own
			continue
		}
		opt := strings.ReplaceAll(name, "-", "_")
		err := run(context.Background(), []string{"mount", "-o", opt + "=\x00bad", "/nonexistent", "/nonexistent"}, io.Discard, io.Discard)
		if err != nil && strings.Contains(err.Error(), "unknown mount option") {
			t.Errorf("-o %s: %v", opt, err)
		}
	}
}

// TestAllowNonEmptyOption: fstab's spelling, -o allow_non_empty, lets zfuse
// mount over a directory that holds files, as --allow-non-empty does;
// without either the mount refuses (mountlib.TestNonEmptyMountpoint).
func TestAllowNonEmptyOption(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--allow-non-empty"}, true},
		{[]string{"-o", "ro,allow_non_empty"}, true},
		{[]string{"-o", "allow_non_empty=false"}, false},
	} {
		f, err := parseTreeFlags("mount", 2, append(tc.args, "/data/x.zarr", "/mnt/x"), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := bool(f.allowNonEmpty); got != tc.want {
			t.Errorf("%q: allow-non-empty is %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestOptionsRun: -o reaches the command: zfuse info -o as_v2 presents a
// v3 store as v2, as --as-v2 does.
func TestOptionsRun(t *testing.T) {
	v3 := testutil.Conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	var flags, opts bytes.Buffer
	if err := run(context.Background(), []string{"info", "--as-v2", v3}, &flags, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"info", "-o", "ro,as_v2", v3}, &opts, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flags.String(), "v3->v2") || flags.String() != opts.String() {
		t.Errorf("info --as-v2:\n%s\ninfo -o as_v2:\n%s", flags.String(), opts.String())
	}
}

// TestHelperArgs: mount.fuse3's command line becomes zfuse mount's.
func TestHelperArgs(t *testing.T) {
	dir := t.TempDir()
	commands := commandNames()
	for _, tc := range []struct {
		args    []string
		want    []string // nil: not the helper form
		wantErr string
	}{
		{[]string{"http://h/x.zarr", dir, "-o", "ro,dev,suid"}, []string{"mount", "-o", "ro,dev,suid", "--background", "--", "http://h/x.zarr", dir}, ""},
		{[]string{"/data/x.zarr", dir}, []string{"mount", "--background", "--", "/data/x.zarr", dir}, ""},
		{[]string{"/data/x.zarr", dir, "-oro", "-f"}, []string{"mount", "-o", "ro", "--", "/data/x.zarr", dir}, ""},
		{[]string{"/data/x.zarr", dir, "-o", "a", "-o", "b"}, []string{"mount", "-o", "a", "-o", "b", "--background", "--", "/data/x.zarr", dir}, ""},
		{[]string{"/data/x.zarr", dir, "-v"}, nil, `not "-v"`},
		{[]string{"mount", "/data/x.zarr", dir}, nil, ""},
		{[]string{"info", dir}, nil, ""},
		{[]string{"compress", dir, filepath.Join(dir, "out")}, nil, ""}, // every command, not a SOURCE
		{[]string{"help", dir}, nil, ""},
		{[]string{"typo", filepath.Join(dir, "no such dir")}, nil, ""},
		{[]string{"--as-v2", dir}, nil, ""},
		{[]string{"/data/x.zarr"}, nil, ""},
	} {
		got, ok, err := helperArgs(tc.args, commands)
		switch {
		case tc.wantErr != "":
			if !ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: %v, %v; want error %q", tc.args, ok, err, tc.wantErr)
			}
		case tc.want == nil:
			if ok {
				t.Errorf("%q: taken for mount.fuse3's form: %q", tc.args, got)
			}
		case err != nil || !ok || !slices.Equal(got, tc.want):
			t.Errorf("%q: %q, %v, %v; want %q", tc.args, got, ok, err, tc.want)
		}
	}
}
