package readahead

import (
	"sync"
	"testing"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/zarr"
)

// TestRouteOf: what decodes an array's chunks, as zfuse info and the
// metrics say it, is decided by RouteOf alone: nothing for chunks stored
// uncompressed, the CPU (by the Loader) for codecs over whole shards, else
// the picked batch decoder, each inner chunk of a shard by itself.
func TestRouteOf(t *testing.T) {
	v3 := func(codecs string) *zarr.Array {
		t.Helper()
		a, _, err := zarr.ParseV3([]byte(`{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "float32",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
			"chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": ` + codecs + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	v2 := func(compressor string) *zarr.Array {
		t.Helper()
		a, err := zarr.ParseV2([]byte(`{"zarr_format": 2, "shape": [8], "chunks": [4], "dtype": "<f4", "fill_value": 0,
			"order": "C", "filters": null, "compressor": ` + compressor + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	const bytesCodec = `{"name": "bytes", "configuration": {"endian": "little"}}`
	sharding := func(inner string) string {
		return `{"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": [` + inner + `],
			"index_codecs": [` + bytesCodec + `, {"name": "crc32c"}]}}`
	}
	gpu := codec.Batch(codec.Raw{}) // stands for what a picker returns
	pick := func(a *zarr.Array) Route { return Route{Decoder: "gpu", Why: "lz4", Batch: gpu} }
	for _, c := range []struct {
		name  string
		a     *zarr.Array
		want  string
		batch bool // the picked batch decoder
	}{
		{"raw", v2(`null`), "none: stored uncompressed", false},
		{"zstd", v2(`{"id": "zstd", "level": 1}`), "gpu: lz4", true},
		{"sharded raw", v3(`[` + sharding(bytesCodec) + `]`), "none,inner-by-range: stored uncompressed", false},
		{"sharded zstd", v3(`[` + sharding(bytesCodec+`, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}`) + `]`),
			"gpu,inner-by-range: lz4", true},
		{"whole shard", v3(`[` + sharding(bytesCodec) + `, {"name": "crc32c"}]`), "cpu,whole-shard", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := RouteOf(c.a, pick)
			if r.String() != c.want {
				t.Errorf("route %q, want %q", r, c.want)
			}
			if got := r.Batch != nil; got != c.batch {
				t.Errorf("batch decoder %v, want %v", got, c.batch)
			}
			if d := RouteOf(c.a, nil); c.batch && (d.Decoder != "cpu" || d.Batch == nil) {
				t.Errorf("without a picker: %+v, want codec.Batch on the cpu", d)
			}
		})
	}
}

// TestDecoded: Config.Decoded is told of each batch decoded, with the
// array's route, and the times it is told add up to the loader's own
// decode time: one measurement.
func TestDecoded(t *testing.T) {
	a := zlibArray(t, []int{20 * 512}, []int{512})
	s := fixture(t, a, "temp", nil)
	var mu sync.Mutex
	var batches int64
	var total time.Duration
	l := newLoader(t, s, func(c *Config) {
		c.Decoder = func(a *zarr.Array) Route { return Route{Decoder: "gpu", Why: "test", Batch: codec.Batch(a.Decoder())} }
		c.Decoded = func(got *zarr.Array, r Route, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if got != a || r.Decoder != "gpu" || r.Why != "test" {
				t.Errorf("Decoded(%p, %+v), want the array %p routed to the test's gpu", got, r, a)
			}
			batches++
			total += took
		}
	})
	for i := range a.NumChunks() {
		if err := readChunk(t, l, a, "temp", i, 1); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	st := l.Stats().Decode[a.Codecs]
	mu.Lock()
	defer mu.Unlock()
	if batches == 0 || batches != st.Batches || total != st.Time {
		t.Errorf("told of %d batches taking %v; the loader counted %d taking %v", batches, total, st.Batches, st.Time)
	}
}
