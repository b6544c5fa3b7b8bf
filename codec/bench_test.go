package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// benchNumcodecs encodes raw with numcodecs' codec for config, or returns
// nil when that python is not installed or its numcodecs lacks the codec.
func benchNumcodecs(config string, raw []byte) []byte {
	if _, err := os.Stat(testutil.Python); err != nil {
		return nil
	}
	cmd := exec.Command(testutil.Python, "-c", `import sys, json, numcodecs
c = numcodecs.get_codec(json.loads(sys.argv[1]))
sys.stdout.buffer.write(bytes(c.encode(sys.stdin.buffer.read())))`, config)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	return out
}

// BenchmarkDecode measures each decoder on a 1 MiB chunk of float64-like
// data, encoded by numcodecs (C libraries) where available and by Go
// encoders otherwise. MB/s is of decoded bytes.
func BenchmarkDecode(b *testing.B) {
	const n = 1 << 20
	raw := compData(n, 16)
	cases := []struct {
		name, config string
		goEnc        func([]byte) []byte
	}{
		{"zstd", `{"id":"zstd","level":1}`, encZstd()},
		{"gzip", `{"id":"gzip","level":1}`, encGzip(1)},
		{"zlib", `{"id":"zlib","level":1}`, encZlib(1)},
		{"bz2", `{"id":"bz2","level":1}`, nil},
		{"lzma-xz", `{"id":"lzma","preset":1}`, nil},
		{"lzma-raw", `{"id":"lzma","format":3,"filters":[{"id":33,"preset":1}]}`, encLZMA2},
		{"crc32", `{"id":"crc32"}`, benchSum(b, `{"id":"crc32"}`)},
		{"crc32c", `{"id":"crc32c"}`, benchSum(b, `{"id":"crc32c"}`)},
		{"adler32", `{"id":"adler32"}`, benchSum(b, `{"id":"adler32"}`)},
		{"fletcher32", `{"id":"fletcher32"}`, benchSum(b, `{"id":"fletcher32"}`)},
		{"jenkins_lookup3", `{"id":"jenkins_lookup3"}`, benchSum(b, `{"id":"jenkins_lookup3"}`)},
		{"base64", `{"id":"base64"}`, encBase64},
	}
	for _, c := range cases {
		src, by := benchNumcodecs(c.config, raw), "numcodecs"
		if src == nil && c.goEnc != nil {
			src, by = c.goEnc(raw), "go"
		}
		if src == nil {
			continue
		}
		d := compNew(b, c.config)
		b.Run(c.name+"/"+by, func(b *testing.B) {
			dst := make([]byte, 0, n)
			if got, err := DecodeFull(d, dst, src); err != nil || !bytes.Equal(got, raw) {
				b.Fatalf("decode: %v", err)
			}
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(dst, src); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/float64(len(src)), "ratio")
		})
	}
}

// benchSum is a Go encoder for a checksum codec (numcodecs 0.11 lacks
// crc32c, fletcher32 and jenkins_lookup3).
func benchSum(tb testing.TB, config string) func([]byte) []byte {
	c := compNew(tb, config).(*checksumCodec)
	return func(p []byte) []byte {
		sum := binary.LittleEndian.AppendUint32(nil, c.sum(c.prefix, p))
		if c.atEnd {
			return append(bytes.Clone(p), sum...)
		}
		return append(sum, p...)
	}
}
