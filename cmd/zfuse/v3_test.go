package main

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestRunV3: zfuse cat and info understand Zarr v3, with and without
// --as-v2, on a store written here: an unsharded int16 array and a sharded
// one (shards of 4 holding inner chunks of 2, index at the end with crc32c,
// the second inner chunk of shard 0 empty), both uncompressed so that the
// expected bytes are plain.
func TestRunV3(t *testing.T) {
	src := t.TempDir()
	write := func(key string, data []byte) { testutil.WriteFile(t, src, key, data) }
	meta := func(chunk int, codecs string) []byte {
		return []byte(`{"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": "int16",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [` + string(rune('0'+chunk)) + `]}},
			"chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": ` + codecs + `}`)
	}
	write("zarr.json", []byte(`{"zarr_format": 3, "node_type": "group", "attributes": {"answer": 42}}`))
	write("plain/zarr.json", meta(4, `[{"name": "bytes", "configuration": {"endian": "little"}}]`))
	write("plain/c/1", []byte{5, 0, 6, 0, 0, 0, 0, 0})
	write("sharded/zarr.json", meta(4, `[{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
		"codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
		"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]`))
	// shard 0: inner chunk 0 = [1, 2] at offset 0, inner chunk 1 empty.
	index := binary.LittleEndian.AppendUint64(nil, 0)
	index = binary.LittleEndian.AppendUint64(index, 4)
	index = binary.LittleEndian.AppendUint64(index, math.MaxUint64)
	index = binary.LittleEndian.AppendUint64(index, math.MaxUint64)
	index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)))
	write("sharded/c/0", append([]byte{1, 0, 2, 0}, index...))
	write("strings/zarr.json", []byte(`{"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "string",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
		"chunk_key_encoding": {"name": "default"}, "fill_value": "", "codecs": [{"name": "vlen-utf8"}]}`))
	checkRuns(t, []runCase{
		{[]string{"cat", src, "plain/c/1"}, "\x05\x00\x06\x00\x00\x00\x00\x00", ""},
		{[]string{"cat", src, "sharded/c/0"}, "\x01\x00\x02\x00", ""},
		{[]string{"cat", src, "sharded/c/1"}, "", "no such file"}, // the empty inner chunk
		{[]string{"cat", src, "sharded/c/2"}, "", "no such file"}, // shard 1 is absent
		{[]string{"cat", src, "sharded/zarr.json"}, `"chunk_shape": [
        2
      ]`, ""},
		{[]string{"cat", "--as-v2", src, "sharded/0"}, "\x01\x00\x02\x00", ""},
		{[]string{"cat", "--as-v2", src, "sharded/.zarray"}, `"dtype": "<i2"`, ""},
		{[]string{"cat", "--as-v2", src, ".zattrs"}, `"answer": 42`, ""},
		{[]string{"cat", "--as-v2", src, "zarr.json"}, "", "no such file"},
		{[]string{"cat", "--as-v2", src, "strings/zarr.json"}, "", "no such file"},
		{[]string{"info", src}, "sharded v3 6 2 4 int16 sharding_indexed(chunk_shape=[2] index=end) [bytes(little)] none,inner-by-range: stored uncompressed 1 chunks, 4 B 1.00 raw", ""},
		{[]string{"info", src}, "strings v3 1 1 - string vlen-utf8 - 0 chunks, 0 B - passed through", ""},
		{[]string{"info", "--as-v2", src}, "plain v3->v2 6 4 - <i2 bytes(little) none: stored uncompressed 1 chunks, 8 B 1.00 raw", ""},
		{[]string{"info", "--as-v2", src}, "strings v3 1 1 - string vlen-utf8 - 0 chunks, 0 B - not shown (--as-v2)", ""},
	})
}
