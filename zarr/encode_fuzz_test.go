package zarr

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzEncoding parses metadata documents into encodings: nothing panics,
// and an encoding that builds writes chunks (and shards) that the array's
// own decoder reads back.
func FuzzEncoding(f *testing.F) {
	f.Add([]byte(writeV2), false)
	f.Add([]byte(writeV3), true)
	src := map[string][]byte{ArrayFile: []byte(writeV2)}
	a, err := ParseV2(src[ArrayFile])
	if err != nil {
		f.Fatal(err)
	}
	for _, tg := range []Target{
		{Format: 3, Chunks: []int{2, 3}, Shard: []int{2, 2}, Compressor: mustCfg(f, `{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`)},
		{Format: 2, Chunks: []int{4, 3}, Filters: nil, Compressor: mustCfg(f, `{"id":"zstd","level":1}`)},
	} {
		files, err := StoreArray(src, a, tg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(files[ArrayFile], false)
		f.Add(files[MetadataFile], true)
	}
	f.Fuzz(func(t *testing.T, doc []byte, v3 bool) {
		name := ArrayFile
		if v3 {
			name = MetadataFile
		}
		enc, err := NewEncoding(map[string][]byte{name: doc})
		if err != nil {
			return
		}
		d := enc.Array()
		if d.ChunkLen() > 1<<20 {
			return // keep runs fast
		}
		r := rand.New(rand.NewPCG(uint64(len(doc)), 1))
		chunk := make([]byte, d.ChunkLen())
		for i := range chunk {
			chunk[i] = byte(r.IntN(4))
		}
		e := enc.Chunk()
		b, err := e.Encode(make([]byte, 0, e.MaxEncodedLen(len(chunk))), chunk)
		if err != nil {
			return // a configuration the encoder refuses (a float delta)
		}
		if d.Shard() == nil {
			got, err := d.DecodeChunk(make([]byte, 0, d.ChunkLen()), b)
			if err != nil || !bytes.Equal(got, chunk) {
				t.Fatalf("chunk round trip: %v", err)
			}
			return
		}
		if d.Shard().InnerChunks() > 1<<12 {
			return
		}
		inner := make([][]byte, d.Shard().InnerChunks())
		for i := range inner {
			inner[i] = b
		}
		shard, err := enc.Shard(inner)
		if err != nil {
			t.Fatalf("shard: %v", err)
		}
		if coords, ok := d.InnerCoords(make([]int, len(d.Shape)), 0); ok {
			got, err := d.DecodeFromShard(make([]byte, 0, d.ChunkLen()), shard, coords)
			if err != nil || !bytes.Equal(got, chunk) {
				t.Fatalf("inner chunk round trip: %v", err)
			}
		}
	})
}
