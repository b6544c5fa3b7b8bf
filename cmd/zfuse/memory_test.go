package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zfuse/zfuse/internal/memlimit"
)

const mib = 1 << 20

// cgroupV1 is a file system with a v1 memory cgroup limited to limit, on
// a 24 GiB machine.
func cgroupV1(limit string) fstest.MapFS {
	return fstest.MapFS{
		"proc/meminfo":        {Data: []byte("MemTotal: 25165824 kB\nMemAvailable: 20971520 kB\n")},
		"proc/self/cgroup":    {Data: []byte("4:memory:/job\n0::/\n")},
		"proc/self/mountinfo": {Data: []byte("35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n")},
		"sys/fs/cgroup/memory/job/memory.limit_in_bytes": {Data: []byte(limit + "\n")},
		"sys/fs/cgroup/memory/memory.limit_in_bytes":     {Data: []byte("9223372036854771712\n")},
	}
}

// planFor parses args as zfuse mount's flags for source and plans its memory
// in fsys.
func planFor(t *testing.T, fsys fstest.MapFS, source string, args ...string) (*memlimit.Plan, *loaderFlags, error) {
	t.Helper()
	fl := flag.NewFlagSet("zfuse mount", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	lf, mf := addLoaderFlags(fl), addMemoryFlags(fl)
	if err := fl.Parse(append([]string{"--serving", "auto"}, args...)); err != nil { // not $ZFUSE_SERVING's
		t.Fatal(err)
	}
	lf.forSource(fl, source)
	p, err := planMemory("mount", fl, lf, mf, fsys)
	return p, lf, err
}

func TestPlanMemory(t *testing.T) {
	p, lf, err := planFor(t, cgroupV1("314572800"), "/data/x.zarr")
	if err != nil {
		t.Fatal(err)
	}
	if lf.decoded != 123*mib || lf.readahead != 61*mib || lf.compressed != 0 || p.Budgets != (memlimit.Budgets{Decoded: 123 * mib, Readahead: 61 * mib}) {
		t.Errorf("under 300 MiB: %+v, flags %v %v %v", p, lf.decoded, lf.readahead, lf.compressed)
	}
	if p.Limit != 300*mib || p.From != "cgroup v1 /sys/fs/cgroup/memory/job" || p.Kind() != "cgroup v1" || p.Over {
		t.Errorf("plan %+v", p)
	}
	var out bytes.Buffer
	if err := printPlan(&out, p); err != nil ||
		out.String() != "memory (zfuse mount): limit 300 MiB (cgroup v1 /sys/fs/cgroup/memory/job); budgets decoded 123 MiB, readahead 61 MiB, compressed 0 B (cache-decoded, readahead sized to fit 75% of the limit)\n" {
		t.Errorf("info line %q, %v", out.String(), err)
	}

	// Planned for passthrough, with its free chunk files.
	p, lf, err = planFor(t, cgroupV1("268435456"), "/data/x.zarr", "--serving", "passthrough")
	if err != nil || !p.Memfds || lf.decoded != 80*mib || lf.readahead != 40*mib {
		t.Errorf("passthrough under 256 MiB: %+v, %v", p, err)
	}

	// The alias --cache counts as --cache-decoded.
	_, lf, err = planFor(t, cgroupV1("314572800"), "https://example.com/x.zarr", "--cache", "64MiB")
	if err != nil || lf.decoded != 64*mib || lf.readahead != 60*mib || lf.compressed != 60*mib {
		t.Errorf("--cache 64MiB over HTTP under 300 MiB: %v %v %v, %v", lf.decoded, lf.readahead, lf.compressed, err)
	}

	// --memory-limit takes the place of the limit found.
	p, lf, err = planFor(t, cgroupV1("314572800"), "/data/x.zarr", "--memory-limit", "2GiB")
	if err != nil || lf.decoded != 1<<30 || p.Limit != 2<<30 || p.Kind() != "flag" || len(p.Sized) != 0 {
		t.Errorf("--memory-limit 2GiB: %+v, %v", p, err)
	}

	// Budgets given that do not fit: refused, naming the limit, as bad
	// usage; or accepted by --allow-over-limit, as they are.
	_, _, err = planFor(t, cgroupV1("314572800"), "/data/x.zarr", "--cache-decoded", "1GiB")
	var u *usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "memory limit of 300 MiB (cgroup v1 /sys/fs/cgroup/memory/job)") ||
		!strings.Contains(err.Error(), "--allow-over-limit") {
		t.Errorf("--cache-decoded 1GiB under 300 MiB: %v", err)
	}
	p, lf, err = planFor(t, cgroupV1("314572800"), "/data/x.zarr", "--cache-decoded", "1GiB", "--allow-over-limit")
	if err != nil || !p.Over || lf.decoded != 1<<30 || lf.readahead != 256*mib {
		t.Errorf("--allow-over-limit: %+v, %v", p, err)
	}

	// No limit in the cgroup: the machine's memory, and the defaults fit.
	p, lf, err = planFor(t, cgroupV1("9223372036854771712"), "/data/x.zarr")
	if err != nil || p.Limit != 24<<30 || p.From != "machine memory" || lf.decoded != 1<<30 || len(p.Sized) != 0 {
		t.Errorf("no cgroup limit: %+v, %v", p, err)
	}

	// Nothing readable: no limit, nothing sized.
	p, lf, err = planFor(t, fstest.MapFS{}, "/data/x.zarr", "--cache-decoded", "100GiB")
	if err != nil || p.Limit != 0 || lf.decoded != 100<<30 {
		t.Errorf("no /proc: %+v, %v", p, err)
	}
	if got := planAttrs(p); !slices.Contains(got, any("none found")) {
		t.Errorf("attrs %v", got)
	}
}

// TestInfoMemory: zfuse info ends with the memory line, and budgets that
// do not fit --memory-limit are refused with exit 2.
func TestInfoMemory(t *testing.T) {
	src := t.TempDir()
	write := storeWriter(t, src)
	write(".zgroup", `{"zarr_format": 2}`)
	write("a/.zarray", `{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4", "compressor": null, "filters": null, "fill_value": 0, "order": "C"}`)
	checkRuns(t, []runCase{
		{[]string{"info", "--serving", "auto", "--memory-limit", "256MiB", src},
			"memory (zfuse mount): limit 256 MiB (--memory-limit); budgets decoded 101 MiB, readahead 50 MiB, compressed 0 B (cache-decoded, readahead sized to fit 75% of the limit)", ""},
		{[]string{"info", "--serving", "auto", "--memory-limit", "256MiB", "--readahead", "1GiB", src}, "", "--readahead 1 GiB with the mount's own 40 MiB need 1.0 GiB, more than 75% of the memory limit of 256 MiB (--memory-limit)"},
		{[]string{"info", "--serving", "auto", "--memory-limit", "256MiB", "--readahead", "1GiB", "--allow-over-limit", src}, "budgets decoded 1 GiB, readahead 1 GiB, compressed 0 B (over the limit, by --allow-over-limit)", ""},
		// As mount options (fstab).
		{[]string{"info", "--serving", "auto", "-o", "ro,memory_limit=256MiB,readahead=1GiB,allow_over_limit", src}, "budgets decoded 1 GiB, readahead 1 GiB, compressed 0 B (over the limit, by --allow-over-limit)", ""},
	})
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"info", "--serving", "auto", "--memory-limit", "256MiB", "--cache-decoded", "1GiB", src}, &stdout, &stderr)
	if exitStatus(io.Discard, err) != 2 {
		t.Errorf("budgets over the limit: exit %d (%v), want 2", exitStatus(io.Discard, err), err)
	}
}
