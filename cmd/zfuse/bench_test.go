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

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/bench"
	"github.com/zfuse/zfuse/readahead"
)

func TestChunkSide(t *testing.T) {
	for _, r := range []struct {
		size string
		side int
		err  bool
	}{
		{"1MiB", 512, false}, {"64KiB", 128, false}, {"4MiB", 1024, false}, {"4KiB", 32, false},
		{"1MB", 0, true}, {"2MiB", 0, true}, {"16MiB", 0, true}, {"lots", 0, true},
	} {
		side, err := chunkSide(r.size)
		if side != r.side && !r.err || (err != nil) != r.err {
			t.Errorf("chunkSide(%q) = %d, %v; want %d, error %v", r.size, side, err, r.side, r.err)
		}
	}
}

func TestBenchTargets(t *testing.T) {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	lf := addLoaderFlags(fl)
	if err := fl.Parse([]string{"--workers", "2", "--cache-decoded", "100MiB", "--cache-compressed", "20MiB", "--readahead", "10MiB"}); err != nil {
		t.Fatal(err)
	}
	b := &bencher{lf: lf, servings: []string{"auto"}, transports: []string{"auto"}, epochs: 3, runs: 1, sets: []*storeSet{{name: "1MiB"}, {name: "64KiB"}}}
	mount := func(ch, reader string) cell { return cell{ch, "blosc", reader, viaMount, "auto", "auto"} }
	self := func(ch, reader string) cell { return cell{ch, "blosc", reader, viaSelf, "", ""} }
	raw := func(ch, reader string) cell { return cell{ch, "", reader, viaRaw, "", ""} }
	floor := func(ch, reader string) cell { return cell{ch, "", reader, viaFloor, "", ""} }
	http := func(ch string) cell { return cell{ch, "blosc", readRemote, viaHTTP, "", ""} }
	// Every target met with a little to spare, in the order targets lists them.
	base := func() *benchResults {
		r := newBenchResults()
		for _, ch := range []string{"1MiB", "64KiB"} {
			r.Add(self(ch, readZarr), []float64{1, 1, 1})
			r.Add(mount(ch, readZarr), []float64{1.3, 2.1, 2.1})
			r.Add(raw(ch, readZarr), []float64{2.5, 2.5, 2.5})
			r.Add(self(ch, readLoader), []float64{1, 1, 1})
			r.Add(mount(ch, readLoader), []float64{1.1, 1.2, 1.2})
			r.Add(self(ch, readDask), []float64{1, 1, 1})
			r.Add(mount(ch, readDask), []float64{1.1, 2, 2})
			r.Add(raw(ch, readGrid), []float64{10, 10, 10})
			r.Add(mount(ch, readGrid), []float64{3, 9, 9})
			r.Add(mount(ch, readList), []float64{2.5, 9, 9})
			r.Add(floor(ch, readGrid), []float64{2.3, 9, 9})
			r.Add(floor(ch, readList), []float64{2.2, 9, 9})
			r.Add(http(ch), []float64{0.1, 0.1, 0.1})
			r.Add(mount(ch, readRemote), []float64{0.31, 1.01, 1.01})
		}
		r.Add(floor("1MiB", readPy), []float64{2, 5, 5})
		r.Add(mount("1MiB", readPy), []float64{2.1, 5, 5})
		r.addMount(mount("1MiB", readGrid), mountStats{hwm: 100 << 20, memfdPeak: 50 << 20})
		r.addMount(floor("1MiB", readGrid), mountStats{hwm: 300 << 20}) // not a mount: no budget
		return r
	}
	verdicts := func() []bool {
		var ok []bool
		for _, t := range b.targets() {
			ok = append(ok, t.OK)
		}
		return ok
	}
	b.res = base()
	got := verdicts()
	if len(got) != 28 || slices.Contains(got, false) {
		t.Fatalf("all met: verdicts %v", got)
	}
	for i, miss := range []func(r *benchResults){
		func(r *benchResults) { r.Rates[mount("1MiB", readZarr)][0][0] = 1.1 },         // 1.1x at epoch 1
		func(r *benchResults) { r.Rates[mount("1MiB", readZarr)][0][1] = 1.9 },         // 1.9x at epoch 2
		func(r *benchResults) { r.Rates[mount("1MiB", readLoader)][0][0] = 0.9 },       // DataLoader epoch 1
		func(r *benchResults) { r.Rates[mount("1MiB", readLoader)][0][2] = 1.05 },      // DataLoader epoch 3
		func(r *benchResults) { r.Rates[mount("1MiB", readZarr)][0][2] = 1.9 },         // warm 0.76x the uncompressed array
		func(r *benchResults) { r.Rates[mount("1MiB", readDask)][0][0] = 0.95 },        // dask mean, cold
		func(r *benchResults) { r.Rates[mount("1MiB", readPy)][0][0] = 1.9 },           // Python open().read(), 0.95x the floor
		func(r *benchResults) { r.Rates[mount("1MiB", readGrid)][0][0] = 2.4 },         // cold 0.24x
		func(r *benchResults) { r.Rates[mount("1MiB", readGrid)][0][1] = 7.9 },         // warm 0.79x
		func(r *benchResults) { r.Rates[mount("1MiB", readList)][0][0] = 2.3 },         // listing 0.77x of grid
		func(r *benchResults) { r.Rates[floor("1MiB", readGrid)][0][0] = 3.1 },         // 0.97x the floor
		func(r *benchResults) { r.Rates[floor("1MiB", readList)][0][0] = 2.6 },         // 0.96x the floor, listing order
		func(r *benchResults) { r.Rates[mount("1MiB", readRemote)][0][0] = 0.29 },      // 2.9x HTTP itself, epoch 1
		func(r *benchResults) { r.Rates[mount("1MiB", readRemote)][0][1] = 0.99 },      // 9.9x HTTP itself, epoch 2
		func(r *benchResults) { r.Rates[mount("64KiB", readZarr)][0][0] = 0.7 },        // 64 KiB epoch 1
		func(r *benchResults) { r.Rates[mount("64KiB", readZarr)][0][1] = 0.9 },        // 64 KiB epoch 2
		func(r *benchResults) { r.Rates[mount("64KiB", readGrid)][0][0] = 2 },          // 64 KiB cold 0.2x
		func(r *benchResults) { r.Rates[mount("64KiB", readGrid)][0][1] = 7 },          // 64 KiB warm 0.7x
		func(r *benchResults) { r.Rates[mount("64KiB", readList)][0][0] = 2 },          // 64 KiB listing 0.67x
		func(r *benchResults) { r.Rates[floor("64KiB", readGrid)][0][0] = 3.8 },        // 0.79x the 64 KiB floor
		func(r *benchResults) { r.Rates[floor("64KiB", readList)][0][0] = 3.2 },        // 0.78x, listing order
		func(r *benchResults) { r.Rates[http("64KiB")][0][0] = 0.11 },                  // 64 KiB 2.8x HTTP itself
		func(r *benchResults) { r.Rates[http("64KiB")][0][1] = 0.11 },                  // 64 KiB 9.2x, epoch 2
		func(r *benchResults) { r.mounts[mount("1MiB", readGrid)][0].hwm = 200 << 20 }, // 250 MiB > 194
	} {
		b.res = base()
		miss(b.res)
		got := verdicts()
		var missed []string
		for k, ok := range got {
			if !ok {
				missed = append(missed, b.targets()[k].Name)
			}
		}
		if len(missed) != 1 {
			t.Errorf("miss %d: targets not met: %q, want exactly one", i, missed)
		}
	}
}

func TestStatsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stats.json")
	s := readahead.Stats{Reads: 7, PrefetchUsed: 5, Decode: map[string]readahead.DecodeStats{"zstd": {Chunks: 3, Time: time.Second}}}
	if err := writeStats(p, s, fusemount.ServeStats{Serving: "no-open", Reads: 3}); err != nil {
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

// TestBenchNpyTargets: the targets of the .npy view, from the npy and
// npy-map cells: a cold read of the .npy file at 0.8x the chunk files or
// more, and a memory map of the first eighth reading at most twice the
// chunks it covers from the store.
func TestBenchNpyTargets(t *testing.T) {
	fl := flag.NewFlagSet("", flag.ContinueOnError)
	b := &bencher{lf: addLoaderFlags(fl), servings: []string{"auto"}, transports: []string{"auto"},
		sets: []*storeSet{{name: "1MiB", shape: []int{64, 1024, 1024}, chunks: []int{1, 512, 512}}}}
	mount := func(reader string) cell { return cell{"1MiB", "blosc", reader, viaMount, "auto", "auto"} }
	find := func(name string) bench.Target {
		for _, t := range b.targets() {
			if strings.Contains(t.Name, name) {
				return t
			}
		}
		t.Fatalf("no target %q in %v", name, b.targets())
		return bench.Target{}
	}
	for _, tc := range []struct {
		npy        float64 // cold GB/s of the .npy file; the chunk files read at 3
		storeReads int64   // of the npy-map mount; the first eighth covers 8 planes of 4 chunks
		npyOK      bool
		mapOK      bool
	}{{2.5, 60, true, true}, {2.3, 64, false, true}, {2.5, 65, true, false}} {
		b.res = newBenchResults()
		b.res.Add(mount(readGrid), []float64{3, 9, 9})
		b.res.Add(mount(readNpy), []float64{tc.npy, 9, 9})
		b.res.addMount(mount(readMap), mountStats{storeReads: tc.storeReads})
		if got := find(".npy file"); got.OK != tc.npyOK {
			t.Errorf("npy at %v GB/s: %+v, want met %v", tc.npy, got, tc.npyOK)
		}
		if got := find("mmap_mode"); got.OK != tc.mapOK || !strings.Contains(got.Got, "of 32") {
			t.Errorf("npy-map reading %d chunks: %+v, want met %v, of 32", tc.storeReads, got, tc.mapOK)
		}
	}
}
