package readahead

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/fstest"

	"github.com/klauspost/compress/zstd"
	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// benchStore is a 1-D float32 array of n zstd chunks of per values each,
// smooth data as in a climate or image store (with noise in the low bits of
// the mantissa: a measurement's, compressing to about half), held in memory
// so that the benchmark measures the loader and the decoder, not a disk.
func benchStore(b testing.TB, n, per int64, noise bool) (*zarr.Array, store.Store) {
	a, err := zarr.ParseV2([]byte(fmt.Sprintf(`{"zarr_format": 2, "shape": [%d], "chunks": [%d], "dtype": "<f4",
		"compressor": {"id": "zstd", "level": 1}, "filters": null, "fill_value": 0, "order": "C"}`, n*per, per)))
	if err != nil || a.PassThrough != nil {
		b.Fatal(err, a.PassThrough)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		b.Fatal(err)
	}
	m := fstest.MapFS{}
	raw := make([]byte, a.ChunkLen())
	for i := range a.NumChunks() {
		for j := range per {
			x := float64(i*per+j) / 5000
			v := math.Float32bits(float32(math.Round(100*math.Sin(x)*math.Cos(x/7)) / 100))
			if noise {
				v ^= uint32(rand.Uint64()) & 0xffff
			}
			binary.LittleEndian.PutUint32(raw[4*j:], v)
		}
		m[a.ChunkKey(a.Coords(i))] = &fstest.MapFile{Data: enc.EncodeAll(raw, nil)}
	}
	return a, store.FS(m)
}

// BenchmarkLoaderSequential scans the array once per iteration through a
// cold Loader, as a reader of a freshly mounted store does.
func BenchmarkLoaderSequential(b *testing.B) {
	a, s := benchStore(b, 32, 1<<18, false) // chunks of 1 MiB
	pool := codec.NewPool(0)
	b.Cleanup(func() { pool.Close() })
	decoders := []struct {
		name string
		d    func(*zarr.Array) Route
	}{
		{"loop", nil},
		{"pool", func(a *zarr.Array) Route { return Route{Decoder: "cpu", Batch: pool.Batch(a.Decoder())} }},
	}
	for _, d := range decoders {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(a.NumChunks() * a.ChunkLen())
			b.ReportAllocs()
			var st Stats
			for b.Loop() {
				l := New(Config{Store: s, Decoder: d.d, DecodedBudget: 64 << 20, CompressedBudget: 64 << 20, ReadaheadBudget: 64 << 20})
				for i := range a.NumChunks() {
					if _, err := l.Chunk(context.Background(), Ref{Array: a, Path: "", Coords: a.Coords(i), PID: 1}); err != nil {
						b.Fatal(err)
					}
				}
				st = l.Stats()
				l.Close()
			}
			b.ReportMetric(float64(st.PrefetchUsed)/float64(st.Reads), "prefetched/read")
		})
	}
	// The reference: the same chunks decoded one after another on the
	// reader's goroutine, no loader.
	b.Run("inline", func(b *testing.B) {
		srcs := make([][]byte, a.NumChunks())
		for i := range srcs {
			srcs[i], _ = s.ReadKey(context.Background(), a.ChunkKey(a.Coords(int64(i))))
		}
		b.SetBytes(a.NumChunks() * a.ChunkLen())
		b.ReportAllocs()
		for b.Loop() {
			for _, src := range srcs {
				if _, err := a.DecodeChunk(make([]byte, 0, a.ChunkLen()), src); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
