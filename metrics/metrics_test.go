package metrics

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// TestMetricsCollector: the collector reports the loader's snapshot as it
// is at each scrape, the loader's hook files each batch decoded under its
// codec and the decoder its route names (gpu or cpu, sharded or not), and
// every metric passes Prometheus' own lint (names, units, _total).
func TestMetricsCollector(t *testing.T) {
	m := New()
	st := readahead.Stats{Reads: 3, DecodedHits: 1, PrefetchUsed: 2, DecodedUsed: 5 << 20, DecodedBudget: 1 << 30,
		Decode: map[string]readahead.DecodeStats{"zstd(level=1)": {Chunks: 2, Bytes: 2 << 20, Time: time.Second}}}
	m.Watch(func() readahead.Stats { return st }, nil, nil)
	m.WatchMemory(func() memlimit.Stats {
		return memlimit.Stats{Limit: 256 << 20, From: "cgroup v1", InUse: 100 << 20, SoftLimit: 192 << 20, Scale: 0.5, Sheds: 1}
	})

	a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f4", "fill_value": 0,
		"order": "C", "filters": null, "compressor": {"id": "zstd", "level": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	decoded := m.Decoded()
	for _, r := range []readahead.Route{{Decoder: "cpu", Why: "zstd has no GPU kernel"},
		{Decoder: "cpu", Why: "no GPU", Shards: "inner-by-range"}, {Decoder: "gpu", Why: "lz4"}} {
		decoded(a, r, time.Millisecond)
	}

	want := `
# HELP zfuse_chunk_reads_total Chunk reads by the serving path (first reads of a chunk by the kernel).
# TYPE zfuse_chunk_reads_total counter
zfuse_chunk_reads_total 3
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "zfuse_chunk_reads_total"); err != nil {
		t.Error(err)
	}
	st.Reads = 7 // the next scrape sees the loader as it is then
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(strings.Replace(want, " 3\n", " 7\n", 1)), "zfuse_chunk_reads_total"); err != nil {
		t.Error(err)
	}
	expect(t, m, map[string]float64{
		"zfuse_cache_hits_total{tier=decoded}":                        1,
		"zfuse_cache_hits_total{tier=readahead}":                      2,
		"zfuse_cache_bytes{tier=decoded}":                             5 << 20,
		"zfuse_cache_budget_bytes{tier=decoded}":                      1 << 30,
		"zfuse_decoded_bytes_total{codec=zstd(level=1)}":              2 << 20,
		"zfuse_decode_seconds_total{codec=zstd(level=1)}":             1,
		"zfuse_decode_batch_seconds{codec=zstd(level=1),decoder=cpu}": 2,
		"zfuse_decode_batch_seconds{codec=zstd(level=1),decoder=gpu}": 1,
		"zfuse_memory_limit_bytes{from=cgroup v1}":                    256 << 20,
		"zfuse_memory_in_use_bytes{}":                                 100 << 20,
		"zfuse_memory_soft_limit_bytes{}":                             192 << 20,
		"zfuse_memory_budget_scale{}":                                 0.5,
		"zfuse_memory_sheds_total{}":                                  1,
	})
	lint(t, m)
}

// TestMetricsStore: the registry counts and times the store's requests by
// backend and op, counts bytes read, and errors other than a missing key;
// the store counted is the store itself, with its optional interfaces (a
// directory opens its files, for passthrough of chunks stored
// uncompressed).
func TestMetricsStore(t *testing.T) {
	m := New()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := store.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.SetHook(m.StoreHook("dir"))
	var src store.Store = d
	defer d.Close()
	if _, ok := src.(store.FileOpener); !ok {
		t.Error("the counted directory store is not a FileOpener")
	}
	ctx := context.Background()
	src.ReadKey(ctx, "k")
	src.ReadKey(ctx, "missing")
	src.ReadKey(ctx, "../outside")
	src.ReadKeyRange(ctx, "k", 1, 2)
	src.List(ctx, ".")
	expect(t, m, map[string]float64{
		"zfuse_store_requests_total{backend=dir,op=read}":       3,
		"zfuse_store_requests_total{backend=dir,op=read_range}": 1,
		"zfuse_store_requests_total{backend=dir,op=list}":       1,
		"zfuse_store_errors_total{backend=dir,op=read}":         1,
		"zfuse_store_read_bytes_total{backend=dir}":             7,
	})
}

// values gathers r's metrics: each series, "name{label=value,...}", and
// its value (a histogram's: its count).
func values(t *testing.T, r *Registry) map[string]float64 {
	t.Helper()
	fams, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue() + float64(mt.GetHistogram().GetSampleCount())
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return got
}

// expect fails t where a series of r (as values names it) has not the
// value want says.
func expect(t *testing.T, r *Registry, want map[string]float64) {
	t.Helper()
	got := values(t, r)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// lint fails t where one of zfuse's metrics does not pass Prometheus' own
// lint (names, units, _total).
func lint(t *testing.T, r *Registry) {
	t.Helper()
	problems, err := testutil.GatherAndLint(r.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "zfuse_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestMetricsServe: the mount's requests by opcode are a counter vector
// (zfuse_fuse_opcode_requests_total{op}), beside the serving path's own
// counts; the loader's Served hook counts bytes served and failed reads,
// not missing chunks nor interrupted reads.
func TestMetricsServe(t *testing.T) {
	r := New()
	ss := fusemount.ServeStats{Serving: "no-open", Requests: map[string]int64{"LOOKUP": 5, "IOCTL": 3, "READ": 2}, Lookups: 5, Reads: 2}
	f := func() fusemount.ServeStats { return ss }
	r.snap.serve.Store(&f)
	served := r.ChunkRead()
	served(100, nil)
	served(20, io.EOF)
	served(0, errors.New("corrupt"))
	served(0, fs.ErrNotExist)
	served(0, context.Canceled)
	expect(t, r, map[string]float64{
		"zfuse_fuse_opcode_requests_total{op=LOOKUP}": 5,
		"zfuse_fuse_opcode_requests_total{op=IOCTL}":  3,
		"zfuse_fuse_opcode_requests_total{op=READ}":   2,
		"zfuse_fuse_requests_total{op=lookup}":        5,
		"zfuse_serving_path_info{path=no-open}":       1,
		"zfuse_served_bytes_total{}":                  120,
		"zfuse_chunk_errors_total{}":                  1,
	})
	lint(t, r)
}

// TestNilRegistry: without --metrics every method does nothing and every
// hook is nil, so that the places that take hooks pay nothing.
func TestNilRegistry(t *testing.T) {
	var r *Registry
	if r.Decoded() != nil || r.ChunkRead() != nil || r.Retried("http") != nil || r.StoreHook("dir") != nil {
		t.Error("a nil Registry returned a hook")
	}
	r.Watch(nil, nil, nil)
	r.WatchMemory(nil)
	stop, err := r.Serve(context.Background(), "256.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

// TestScrape: warmup's reading of a mount's metrics gives the serving
// path and what each tier holds.
func TestScrape(t *testing.T) {
	r := New()
	r.Watch(func() readahead.Stats {
		return readahead.Stats{DecodedUsed: 5, DecodedBudget: 10, ReadaheadUsed: 1, ReadaheadBudget: 2}
	}, nil, nil)
	f := func() fusemount.ServeStats { return fusemount.ServeStats{Serving: "no-open"} }
	r.snap.serve.Store(&f)
	srv := httptest.NewServer(promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	got, err := Scrape(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil || got.Serving != "no-open" || got.Held["decoded"] != 5 || got.Budget["readahead"] != 2 {
		t.Errorf("Scrape: %+v, %v", got, err)
	}
	if _, err := Scrape(context.Background(), "127.0.0.1:1"); err == nil {
		t.Error("Scrape of nothing succeeded")
	}
}
