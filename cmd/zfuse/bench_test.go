package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zfuse/zfuse/fs"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/readahead"
)

func TestParseVmHWM(t *testing.T) {
	for _, r := range []struct {
		status string
		want   int64
		err    bool
	}{
		{"Name:\tzfuse\nVmPeak:\t  2000 kB\nVmHWM:\t   1234 kB\nVmRSS:\t 1000 kB\n", 1234 << 10, false},
		{"VmHWM: 0 kB\n", 0, false},
		{"Name:\tzfuse\n", 0, true},
		{"VmHWM:\tlots kB\n", 0, true},
	} {
		got, err := parseVmHWM(strings.NewReader(r.status))
		if got != r.want || (err != nil) != r.err {
			t.Errorf("parseVmHWM(%q) = %d, %v; want %d, error %v", r.status, got, err, r.want, r.err)
		}
	}
	if n, err := vmHWM(os.Getpid()); err != nil || n <= 0 {
		t.Errorf("vmHWM(self) = %d, %v", n, err)
	}
}

func TestParseCPUTime(t *testing.T) {
	stat := "4242 (zfuse (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 123 45 0 0 20 0 9 0 100 1000000 2000 18446744073709551615"
	if d, err := parseCPUTime(stat); err != nil || d != 1680*time.Millisecond {
		t.Errorf("parseCPUTime = %v, %v; want 1.68s", d, err)
	}
	if _, err := parseCPUTime("4242 (zfuse) S 1"); err == nil {
		t.Errorf("short stat line: no error")
	}
	if d, err := cpuTime(os.Getpid()); err != nil || d < 0 {
		t.Errorf("cpuTime(self) = %v, %v", d, err)
	}
}

// A 3×2×2 chunk grid: C order is 0.0.0 0.0.1 0.1.0 ...; the strided walk
// goes along axis 0 for each (j, k), a step of 4 chunks.
func TestBenchKeys(t *testing.T) {
	b := &bencher{shape: []int{3, 4, 4}, chunks: []int{1, 2, 2}}
	for i := range 3 {
		for j := range 2 {
			for k := range 2 {
				b.keys = append(b.keys, strings.Join([]string{itoa(i), itoa(j), itoa(k)}, "."))
			}
		}
	}
	want := []string{"0.0.0", "1.0.0", "2.0.0", "0.0.1", "1.0.1", "2.0.1", "0.1.0", "1.1.0", "2.1.0", "0.1.1", "1.1.1", "2.1.1"}
	if got := b.stridedKeys(); !slices.Equal(got, want) {
		t.Errorf("strided %v\nwant %v", got, want)
	}
	r := b.randomKeys()
	if len(r) != 12 || !slices.Equal(slices.Sorted(slices.Values(r)), slices.Sorted(slices.Values(b.keys))) {
		t.Errorf("random keys %v: want every key once (16 or more asked, 12 there)", r)
	}
	if !slices.Equal(r, b.randomKeys()) || slices.Equal(r, b.keys) {
		t.Errorf("random keys %v: want a fixed shuffle", r)
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestBenchTargets(t *testing.T) {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	lf := addLoaderFlags(fl)
	if err := fl.Parse([]string{"--workers", "2", "--cache-decoded", "100MiB", "--cache-compressed", "20MiB"}); err != nil {
		t.Fatal(err)
	}
	b := &bencher{lf: lf, cores: 2}
	base := func() *benchResults {
		return &benchResults{
			mount:    map[string]*[2]float64{storeRaw: {2, 0.5}, storeBlosc: {1.9, 0.9}, storeZstd: {1.6, 0.9}},
			oneCore:  map[string]float64{storeBlosc: 4, storeZstd: 0.8},
			pyMount:  map[string]float64{storeBlosc: 1},
			pyDirect: map[string]float64{storeBlosc: 0.4},
			strided:  patternResult{stats: readahead.Stats{Reads: 100, PrefetchUsed: 95}},
			random:   patternResult{bytes: 100 << 20, stats: readahead.Stats{PrefetchedBytes: 8 << 20, PrefetchUsedBytes: 0}},
			rss:      map[string]int64{"a": 100 << 20, "b": 150 << 20},
			warm:     9, shm: 10,
		}
	}
	verdicts := func(r *benchResults) []bool {
		var ok []bool
		for _, t := range b.targets(r) {
			ok = append(ok, t.ok)
		}
		return ok
	}
	all := []bool{true, true, true, true, true, true, true}
	if got := verdicts(base()); !slices.Equal(got, all) {
		t.Errorf("all met: verdicts %v", got)
	}
	for i, miss := range []func(r *benchResults){
		func(r *benchResults) { r.mount[storeBlosc][0] = 1.7 },               // 0.85 of the ceiling
		func(r *benchResults) { r.mount[storeZstd][0] = 1.4 },                // 0.875 of min(2, 2 × 0.8)
		func(r *benchResults) { r.pyDirect[storeBlosc] = 0.6 },               // 1.67x
		func(r *benchResults) { r.strided.stats.PrefetchUsed = 89 },          // 89%
		func(r *benchResults) { r.random.stats.PrefetchedBytes = 11 << 20 },  // 11% never read
		func(r *benchResults) { r.rss["c"] = 100<<20 + 20<<20 + 64<<20 + 1 }, // a byte over
		func(r *benchResults) { r.warm = 8.9 },                               // 0.89x
	} {
		r := base()
		miss(r)
		want := slices.Clone(all)
		want[i] = false
		if got := verdicts(r); !slices.Equal(got, want) {
			t.Errorf("target %d missed: verdicts %v, want %v", i, got, want)
		}
	}
}

func TestStatsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stats.json")
	s := readahead.Stats{Reads: 7, PrefetchUsed: 5, Decode: map[string]readahead.DecodeStats{"zstd": {Chunks: 3, Time: time.Second}}}
	if err := writeStats(p, s, fs.ServeStats{Serving: "no-open", Reads: 3}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc statsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Pid != os.Getpid() || doc.Stats.Reads != 7 || doc.Stats.Decode["zstd"].Time != time.Second || doc.Serve.Serving != "no-open" || doc.Serve.Reads != 3 {
		t.Errorf("stats file %s", b)
	}
	if _, err := os.Stat(p + ".tmp"); err == nil {
		t.Errorf("temporary file left behind")
	}
}

func TestLoaderFlags(t *testing.T) {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	lf := addLoaderFlags(fl)
	if lf.decoder != gpu.Auto {
		t.Errorf("--decoder defaults to %q", lf.decoder)
	}
	if err := fl.Parse([]string{"--cache", "3MiB", "--readahead", "1.5MiB", "--workers", "5", "--decoder", "cpu"}); err != nil {
		t.Fatal(err)
	}
	if lf.decoded != 3<<20 || lf.readahead != 3<<19 || lf.compressed != 0 || lf.workers != 5 || lf.decoder != gpu.CPU {
		t.Errorf("flags %+v", lf)
	}
	if lf.memory() != 3<<20+3<<19+64<<20 {
		t.Errorf("memory limit %d", lf.memory())
	}
	for _, r := range []struct {
		args   []string
		source string
		want   int64
	}{
		{nil, "/data/x.zarr", 0},
		{nil, "https://example.com/x.zarr", remoteCompressed},
		{nil, "s3://bucket/x.zarr", remoteCompressed},
		{[]string{"--cache-compressed", "0"}, "s3://bucket/x.zarr", 0},
		{[]string{"--cache-compressed", "1GiB"}, "/data/x.zarr", 1 << 30},
	} {
		fl := flag.NewFlagSet("", flag.ContinueOnError)
		lf := addLoaderFlags(fl)
		if err := fl.Parse(r.args); err != nil {
			t.Fatal(err)
		}
		lf.forSource(fl, r.source)
		if int64(lf.compressed) != r.want {
			t.Errorf("%q %s: compressed tier %d, want %d", r.args, r.source, lf.compressed, r.want)
		}
	}
	// What bench passes to its mounts parses back to the same.
	fl2 := flag.NewFlagSet("", flag.ContinueOnError)
	lf2 := addLoaderFlags(fl2)
	if err := fl2.Parse(lf.args()); err != nil || *lf2 != *lf {
		t.Errorf("args %q parse to %+v, %v; want %+v", lf.args(), lf2, err, lf)
	}
}

func TestBenchArgs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"extra"}, {"--size", "lots"}, {"--nosuch"}} {
		if err := run(context.Background(), append([]string{"bench"}, args...), &stdout, &stderr); err == nil {
			t.Errorf("zfuse bench %q: no error", args)
		}
	}
	err := run(context.Background(), []string{"bench", "--store", t.TempDir()}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--store must hold") {
		t.Errorf("bench on an empty --store: %v", err)
	}
}
