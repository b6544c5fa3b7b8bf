package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/internal/memlimit"
)

const mib = 1 << 20

func TestFitBudgets(t *testing.T) {
	local := budgets{decoded: 1 << 30, readahead: 256 * mib}
	remote := budgets{decoded: 1 << 30, readahead: 256 * mib, compressed: remoteCompressed}
	for _, r := range []struct {
		name    string
		limit   int64
		b       budgets
		given   []string
		want    budgets
		sized   []string
		wantErr string
		memfds  bool
	}{
		{"defaults fit a big machine", 24 << 30, remote, nil, remote, nil, "", false},
		// 75% of 300 MiB less 40 MiB: 185 MiB, 2:1.
		{"local under 300 MiB", 300 * mib, local, nil, budgets{decoded: 123 * mib, readahead: 61 * mib}, []string{"cache-decoded", "readahead"}, "", false},
		// 152 MiB, 2:1:1.
		{"remote under 256 MiB", 256 * mib, remote, nil, budgets{decoded: 76 * mib, readahead: 38 * mib, compressed: 38 * mib},
			[]string{"cache-decoded", "readahead", "cache-compressed"}, "", false},
		// 1496 MiB: readahead's share (374) is above its default, so it
		// keeps 256 and the others share the rest, 2:1.
		{"remote under 2 GiB", 2 << 30, remote, nil, budgets{decoded: 826 * mib, readahead: 256 * mib, compressed: 413 * mib},
			[]string{"cache-decoded", "cache-compressed"}, "", false},
		{"local under 2 GiB: the defaults fit", 2 << 30, local, nil, local, nil, "", false},
		{"given decoded: readahead gets the rest", 256 * mib, budgets{decoded: 64 * mib, readahead: 256 * mib}, []string{"cache-decoded"},
			budgets{decoded: 64 * mib, readahead: 88 * mib}, []string{"readahead"}, "", false},
		{"given compressed 0 stays 0", 256 * mib, budgets{decoded: 1 << 30, readahead: 256 * mib}, []string{"cache-compressed"},
			budgets{decoded: 101 * mib, readahead: 50 * mib}, []string{"cache-decoded", "readahead"}, "", false},
		{"given ones fit exactly", 256 * mib, budgets{decoded: 100 * mib, readahead: 52 * mib}, []string{"cache-decoded", "readahead"},
			budgets{decoded: 100 * mib, readahead: 52 * mib}, nil, "", false},
		{"given ones too large", 300 * mib, local, []string{"cache-decoded"}, local, nil,
			"--cache-decoded 1 GiB with the mount's own 40 MiB need 1.0 GiB, more than 75% of the memory limit of 300 MiB", false},
		{"all given, too large", 300 * mib, remote, []string{"cache-decoded", "readahead", "cache-compressed"}, remote, nil,
			"--cache-decoded 1 GiB and --readahead 256 MiB and --cache-compressed 512 MiB with the mount's own 40 MiB need 1.8 GiB", false},
		{"a limit too small for anything", 32 * mib, local, nil, local, nil, "75% of the memory limit of 32 MiB leaves no room for caches", false},
		// Under passthrough the mount's own memory has 32 MiB of free
		// chunk files besides: 120 MiB, 2:1(:1).
		{"passthrough, local under 256 MiB", 256 * mib, local, nil, budgets{decoded: 80 * mib, readahead: 40 * mib},
			[]string{"cache-decoded", "readahead"}, "", true},
		{"passthrough, remote under 256 MiB", 256 * mib, remote, nil, budgets{decoded: 60 * mib, readahead: 30 * mib, compressed: 30 * mib},
			[]string{"cache-decoded", "readahead", "cache-compressed"}, "", true},
		{"passthrough, local under 2 GiB: the defaults fit", 2 << 30, local, nil, local, nil, "", true},
		{"passthrough, given readahead too large", 256 * mib, budgets{decoded: 1 << 30, readahead: 200 * mib}, []string{"readahead"},
			budgets{decoded: 1 << 30, readahead: 200 * mib}, nil,
			"--readahead 200 MiB with the mount's own 72 MiB need 272 MiB, more than 75% of the memory limit of 256 MiB", true},
	} {
		t.Run(r.name, func(t *testing.T) {
			given := map[string]bool{}
			for _, g := range r.given {
				given[g] = true
			}
			got, sized, err := fitBudgets(r.limit, r.b, given, r.memfds)
			switch {
			case r.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), r.wantErr) {
					t.Errorf("err %v, want %q", err, r.wantErr)
				}
			case err != nil:
				t.Errorf("err %v", err)
			}
			if got != r.want || !slices.Equal(sized, r.sized) {
				t.Errorf("fitBudgets = %+v, sized %v; want %+v, %v", got, sized, r.want, r.sized)
			}
			if err == nil && len(sized) > 0 && got.sum()+own(r.memfds) > int64(memoryShare*float64(r.limit)) {
				t.Errorf("%+v and the mount's own memory are over %.2f of %d", got, memoryShare, r.limit)
			}
		})
	}
}

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
func planFor(t *testing.T, fsys fstest.MapFS, source string, args ...string) (*memoryPlan, *loaderFlags, error) {
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
	if lf.decoded != 123*mib || lf.readahead != 61*mib || lf.compressed != 0 || p.budgets != (budgets{123 * mib, 0, 61 * mib}) {
		t.Errorf("under 300 MiB: %+v, flags %v %v %v", p, lf.decoded, lf.readahead, lf.compressed)
	}
	if p.limit != 300*mib || p.from != "cgroup v1 /sys/fs/cgroup/memory/job" || p.kind() != "cgroup v1" || p.over {
		t.Errorf("plan %+v", p)
	}
	var out bytes.Buffer
	if err := p.print(&out); err != nil ||
		out.String() != "memory (zfuse mount): limit 300 MiB (cgroup v1 /sys/fs/cgroup/memory/job); budgets decoded 123 MiB, readahead 61 MiB, compressed 0 B (cache-decoded, readahead sized to fit 75% of the limit)\n" {
		t.Errorf("info line %q, %v", out.String(), err)
	}

	// Planned for passthrough, with its free chunk files.
	p, lf, err = planFor(t, cgroupV1("268435456"), "/data/x.zarr", "--serving", "passthrough")
	if err != nil || !p.memfds || lf.decoded != 80*mib || lf.readahead != 40*mib {
		t.Errorf("passthrough under 256 MiB: %+v, %v", p, err)
	}

	// The alias --cache counts as --cache-decoded.
	_, lf, err = planFor(t, cgroupV1("314572800"), "https://example.com/x.zarr", "--cache", "64MiB")
	if err != nil || lf.decoded != 64*mib || lf.readahead != 60*mib || lf.compressed != 60*mib {
		t.Errorf("--cache 64MiB over HTTP under 300 MiB: %v %v %v, %v", lf.decoded, lf.readahead, lf.compressed, err)
	}

	// --memory-limit takes the place of the limit found.
	p, lf, err = planFor(t, cgroupV1("314572800"), "/data/x.zarr", "--memory-limit", "2GiB")
	if err != nil || lf.decoded != 1<<30 || p.limit != 2<<30 || p.kind() != "flag" || len(p.sized) != 0 {
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
	if err != nil || !p.over || lf.decoded != 1<<30 || lf.readahead != 256*mib {
		t.Errorf("--allow-over-limit: %+v, %v", p, err)
	}

	// No limit in the cgroup: the machine's memory, and the defaults fit.
	p, lf, err = planFor(t, cgroupV1("9223372036854771712"), "/data/x.zarr")
	if err != nil || p.limit != 24<<30 || p.from != "machine memory" || lf.decoded != 1<<30 || len(p.sized) != 0 {
		t.Errorf("no cgroup limit: %+v, %v", p, err)
	}

	// Nothing readable: no limit, nothing sized.
	p, lf, err = planFor(t, fstest.MapFS{}, "/data/x.zarr", "--cache-decoded", "100GiB")
	if err != nil || p.limit != 0 || lf.decoded != 100<<30 {
		t.Errorf("no /proc: %+v, %v", p, err)
	}
	if got := p.attrs(); !slices.Contains(got, any("none found")) {
		t.Errorf("attrs %v", got)
	}
}

func TestSoftLimit(t *testing.T) {
	b := budgets{decoded: 123 * mib, readahead: 61 * mib}
	under := &memoryPlan{limit: 300 * mib, budgets: b}
	over := &memoryPlan{limit: 300 * mib, budgets: b, over: true}
	none := &memoryPlan{budgets: b}
	pt := &memoryPlan{limit: 256 * mib, budgets: budgets{decoded: 80 * mib, readahead: 40 * mib}, memfds: true}
	for _, r := range []struct {
		name   string
		p      *memoryPlan
		b      budgets
		memfds bool
		want   int64
	}{
		{"heap: the budgets and the slack, under 75% of the limit", under, b, false, 224 * mib},
		{"small budgets: budgets and 40 MiB", under, budgets{decoded: 20 * mib}, false, 60 * mib},
		{"over the limit, accepted", over, b, false, 224 * mib},
		{"no limit", none, b, false, 224 * mib},
		// 75% of 256 MiB less the files (80 + 40 + 32 free): 40 MiB,
		// below the 40 MiB of readahead and 64 on the heap.
		{"memfds: room left by them", pt, pt.budgets, true, 40 * mib},
		{"memfds, no limit: all but the decoded tier, and 40 MiB", none, b, true, 101 * mib},
		// Planned for the heap, fallen back to passthrough: what the
		// memfds leave of 225 MiB.
		{"memfds on budgets planned without", under, b, true, 32 * mib},
		{"never below 32 MiB", under, budgets{decoded: 200 * mib}, true, 32 * mib},
	} {
		if got := r.p.softLimit(r.b, r.memfds); got != r.want {
			t.Errorf("%s: %d MiB, want %d MiB", r.name, got/mib, r.want/mib)
		}
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

func TestShedStep(t *testing.T) {
	const limit, planned = 1000, 600
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, r := range []struct {
		name string
		s    shedState
		now  time.Time
		used int64
		want shedState
	}{
		{"calm", shedState{scale: 1}, at(0), 700, shedState{scale: 1}},
		{"at the mark: no shed", shedState{scale: 1}, at(0), 850, shedState{scale: 1}},
		{"over it: halve", shedState{scale: 1}, at(0), 851, shedState{scale: 0.5, changed: at(0)}},
		{"again too soon", shedState{scale: 0.5, changed: at(0)}, at(shedEvery - 1), 900, shedState{scale: 0.5, changed: at(0)}},
		{"again after shedEvery", shedState{scale: 0.5, changed: at(0)}, at(shedEvery), 900, shedState{scale: 0.25, changed: at(shedEvery)}},
		{"far over: quarter", shedState{scale: 1}, at(0), 951, shedState{scale: 0.25, changed: at(0)}},
		{"never below minScale", shedState{scale: minScale}, at(time.Hour), 999, shedState{scale: minScale}},
		{"pressure ends the room to grow", shedState{scale: 0.5, roomAt: at(0)}, at(time.Second), 900, shedState{scale: 0.25, changed: at(time.Second)}},
		// 400 + 600*0.5 = 700 < 750: room, but not for growAfter yet.
		{"room: start counting", shedState{scale: 0.5}, at(0), 400, shedState{scale: 0.5, roomAt: at(0)}},
		{"room, not long enough", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter - 1), 400, shedState{scale: 0.5, roomAt: at(0)}},
		{"room for growAfter: double", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter), 400, shedState{scale: 1, changed: at(growAfter)}},
		// 500 + 300 = 800: doubling would take it over growBelow.
		{"no room to double", shedState{scale: 0.5, roomAt: at(0)}, at(growAfter), 500, shedState{scale: 0.5}},
		{"at 1 there is nothing to grow", shedState{scale: 1}, at(0), 0, shedState{scale: 1}},
	} {
		if got := r.s.step(r.now, r.used, limit, planned); got != r.want {
			t.Errorf("%s: %+v, want %+v", r.name, got, r.want)
		}
	}
}

// usageFS is a cgroup v2 directory "cg" whose memory in use the test sets.
type usageFS struct {
	mu   sync.Mutex
	used int64
}

func (u *usageFS) set(n int64) { u.mu.Lock(); u.used = n; u.mu.Unlock() }

func (u *usageFS) Open(name string) (fs.File, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return fstest.MapFS{
		"cg/memory.current": {Data: []byte(fmt.Sprintf("%d\n", u.used+100))},
		"cg/memory.stat":    {Data: []byte("anon 1\nactive_file 60\ninactive_file 40\n")},
	}.Open(name)
}

// budgetLog records the budgets a watcher sets.
type budgetLog struct {
	mu  sync.Mutex
	set []budgets
}

func (b *budgetLog) SetBudgets(decoded, compressed, readahead int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.set = append(b.set, budgets{decoded, compressed, readahead})
}

func (b *budgetLog) last() budgets {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.set[len(b.set)-1]
}

// TestPressureWatcher: the watcher reads the cgroup's memory in use (less
// file pages), halves the loader's budgets when it goes over shedAt of the
// limit, and grows them back once there has been room for growAfter; the
// soft memory limit follows.
func TestPressureWatcher(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	synctest.Test(t, func(t *testing.T) {
		const limit = 1000 * mib
		plan := &memoryPlan{found: memlimit.Limit{Bytes: limit, Cgroup: memlimit.Cgroup{Version: 2, Dir: "cg", Mount: "."}},
			limit: limit, budgets: budgets{decoded: 400 * mib, readahead: 200 * mib}}
		fsys := &usageFS{used: 500 * mib}
		loader := &budgetLog{}
		w := newPressureWatcher(plan, fsys, loader, slog.New(slog.DiscardHandler))
		w.start(false)
		defer w.stop()
		synctest.Wait()
		if got := loader.last(); got != plan.budgets || gomemlimitSet() || debug.SetMemoryLimit(-1) != 640*mib {
			t.Errorf("at start: budgets %+v, soft limit %d MiB; want the plan's and 640 MiB", got, debug.SetMemoryLimit(-1)/mib)
		}
		fsys.set(900 * mib)
		time.Sleep(pressureTic)
		synctest.Wait()
		if got, st := loader.last(), w.stats(); got != (budgets{decoded: 200 * mib, readahead: 100 * mib}) || st.Sheds != 1 || st.Scale != 0.5 || st.InUse != 900*mib {
			t.Errorf("over the mark: budgets %+v, %+v", got, st)
		}
		if debug.SetMemoryLimit(-1) != 340*mib {
			t.Errorf("soft limit %d MiB, want 340", debug.SetMemoryLimit(-1)/mib)
		}
		fsys.set(300 * mib)
		time.Sleep(growAfter + 2*pressureTic)
		synctest.Wait()
		if got, st := loader.last(), w.stats(); got != plan.budgets || st.Scale != 1 || st.Sheds != 1 {
			t.Errorf("after growAfter with room: budgets %+v, %+v", got, st)
		}
	})
}
