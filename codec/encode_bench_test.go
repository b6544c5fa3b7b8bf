package codec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// benchField is n float32s like zfuse bench's array: a smooth field
// around 288 with noise of 0.25 (the low mantissa bytes are noise).
func benchField(n int) []byte {
	r := rand.New(rand.NewPCG(42, 0))
	b := make([]byte, 4*n)
	for i := range n {
		y, x := float64(i/512)/512*6*math.Pi, float64(i%512)/512*6*math.Pi
		v := 288 + 12*math.Sin(y)*math.Cos(0.7*x) + 0.25*r.NormFloat64()
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	}
	return b
}

// BenchmarkEncode measures each encoder on one 1 MiB float32 chunk on one
// core; MB/s is of decoded bytes, ratio is decoded / encoded.
func BenchmarkEncode(b *testing.B) {
	raw := benchField(1 << 18)
	for _, c := range []struct{ name, config string }{
		{"blosc-lz4-shuffle", `{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`},
		{"blosc-lz4-bitshuffle", `{"id":"blosc","cname":"lz4","clevel":5,"shuffle":2}`},
		{"blosc-blosclz-shuffle", `{"id":"blosc","cname":"blosclz","clevel":5,"shuffle":1}`},
		{"blosc-zstd-shuffle", `{"id":"blosc","cname":"zstd","clevel":5,"shuffle":1}`},
		{"lz4", `{"id":"lz4"}`},
		{"zstd-3", `{"id":"zstd","level":3}`},
		{"gzip-1", `{"id":"gzip","level":1}`},
		{"zlib-1", `{"id":"zlib","level":1}`},
		{"shuffle", `{"id":"shuffle","elementsize":4}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := NewEncoder(json.RawMessage(c.config), 4)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, e.MaxEncodedLen(len(raw)))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				if out, err = e.Encode(dst, raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw))/float64(len(out)), "ratio")
		})
	}
}

// BenchmarkEncodePool encodes batches of 16 chunks with Blosc-lz4 on a
// pool of GOMAXPROCS workers (go test -cpu sets it): the throughput zfuse
// compress has on all cores.
func BenchmarkEncodePool(b *testing.B) {
	raw := benchField(1 << 18)
	e, err := NewEncoder(json.RawMessage(`{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`), 4)
	if err != nil {
		b.Fatal(err)
	}
	p := NewPool(0)
	defer p.Close()
	srcs := make([][]byte, 16)
	for i := range srcs {
		srcs[i] = raw
	}
	jobs := EncodeJobs(e, srcs)
	be := p.EncoderBatch(e)
	b.SetBytes(int64(len(raw) * len(srcs)))
	for b.Loop() {
		if err := be.EncodeBatch(context.Background(), jobs); err != nil {
			b.Fatal(err)
		}
	}
}
