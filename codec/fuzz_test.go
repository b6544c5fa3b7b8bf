package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/ulikunitz/xz"
	"github.com/zfuse/zfuse/internal/testutil"
)

// fuzzRoom bounds dst in fuzz targets: room for any seed, small enough to
// keep each run fast.
const fuzzRoom = 1 << 18

// fuzzSeeds adds Go-encoded payloads of a few sizes, and numcodecs-written
// fixtures of codec folder when the conformance data is present.
func fuzzSeeds(f *testing.F, enc func([]byte) []byte, folder string) {
	for _, n := range []int{0, 1, 100, 5000} {
		if enc != nil {
			f.Add(enc(compData(n, uint64(n))))
		}
	}
	shared := testutil.SharedDir()
	if folder == "" || shared == "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(shared, "conformance", "numcodecs", "fixture", folder, "codec.*", "encoded.0[0-4].dat"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) <= fuzzRoom {
			f.Add(b)
		}
	}
}

// fuzzCheck decodes src with d into room bytes and checks what every
// decoder promises: no write past cap(dst), dst's array kept, only our
// error kinds, and agreement with Batch and a Pool.
func fuzzCheck(t *testing.T, p *Pool, d Decoder, src []byte, room int) {
	const guard = 64
	buf := make([]byte, room+guard)
	for i := range buf[room:] {
		buf[room+i] = 0xA5
	}
	dst := buf[:0:room]
	out, err := d.Decode(dst, src)
	for i, c := range buf[room:] {
		if c != 0xA5 {
			t.Fatalf("wrote past cap(dst) at cap+%d", i)
		}
	}
	if err == nil {
		if len(out) > room || cap(out) != room || (len(out) > 0 && unsafe.SliceData(out) != unsafe.SliceData(buf)) {
			t.Fatalf("output (len %d cap %d) is not dst's array (cap %d)", len(out), cap(out), room)
		}
	} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrConfig) {
		t.Fatalf("error of no codec kind: %v", err)
	}
	jobs := []Job{{Src: src, Dst: make([]byte, 0, room)}}
	pjobs := []Job{{Src: src, Dst: make([]byte, 0, room)}}
	Batch(d).DecodeBatch(context.Background(), jobs)
	p.Batch(d).DecodeBatch(context.Background(), pjobs)
	for _, j := range []Job{jobs[0], pjobs[0]} {
		if (j.Err == nil) != (err == nil) || (err == nil && !bytes.Equal(j.Dst, out)) {
			t.Fatalf("Decode (%d bytes, %v) and batch (%d bytes, %v) disagree", len(out), err, len(j.Dst), j.Err)
		}
	}
}

// fuzzPool is a Pool that lives as long as the fuzz target.
func fuzzPool(f *testing.F) *Pool {
	p := NewPool(2)
	f.Cleanup(func() { p.Close() })
	return p
}

func fuzzOne(f *testing.F, config string, enc func([]byte) []byte, folder string) {
	fuzzSeeds(f, enc, folder)
	d := compNew(f, config)
	p := fuzzPool(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzCheck(t, p, d, src, fuzzRoom)
		fuzzCheck(t, p, d, src, 100) // small room: the ErrTooLarge paths
	})
}

func FuzzGzip(f *testing.F) { fuzzOne(f, `{"id":"gzip"}`, encGzip(6), "gzip") }
func FuzzZlib(f *testing.F) { fuzzOne(f, `{"id":"zlib"}`, encZlib(6), "zlib") }
func FuzzZstd(f *testing.F) { fuzzOne(f, `{"id":"zstd"}`, encZstd(), "zstd") }
func FuzzBZ2(f *testing.F)  { fuzzOne(f, `{"id":"bz2"}`, nil, "bz2") }

// fuzzLZMAConfigs are the lzma variants FuzzLZMA picks from.
var fuzzLZMAConfigs = []string{
	`{"id":"lzma","format":1}`,
	`{"id":"lzma","format":2}`,
	`{"id":"lzma","format":3,"filters":[{"id":33,"preset":1}]}`,
	`{"id":"lzma","format":3,"filters":[{"id":4611686018427387905,"preset":0}]}`,
	`{"id":"lzma","format":0}`,
}

func FuzzLZMA(f *testing.F) {
	encs := []func([]byte) []byte{
		encXZ(xz.WriterConfig{DictCap: 1 << 16}), encLZMAAlone(false), encLZMA2, encLZMAAlone(true), encLZMAAlone(false),
	}
	for i, enc := range encs {
		for _, n := range []int{0, 1, 100, 5000} {
			f.Add(uint8(i), enc(compData(n, uint64(n))))
		}
	}
	var ds []Decoder
	for _, c := range fuzzLZMAConfigs {
		ds = append(ds, compNew(f, c))
	}
	p := fuzzPool(f)
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		d := ds[int(which)%len(ds)]
		fuzzCheck(t, p, d, src, fuzzRoom)
		fuzzCheck(t, p, d, src, 100)
	})
}

var fuzzChecksumConfigs = []string{
	`{"id":"crc32"}`, `{"id":"crc32","location":"end"}`, `{"id":"adler32"}`,
	`{"id":"crc32c"}`, `{"id":"fletcher32"}`, `{"id":"jenkins_lookup3","initval":5,"prefix":[1,2,3]}`,
	`{"id":"base64"}`,
}

func FuzzChecksums(f *testing.F) {
	var ds []*checksumCodec
	for _, c := range fuzzChecksumConfigs[:len(fuzzChecksumConfigs)-1] {
		ds = append(ds, compNew(f, c).(*checksumCodec))
	}
	for i, c := range ds {
		payload := compData(100*i, uint64(i))
		sum := binary.LittleEndian.AppendUint32(nil, c.sum(c.prefix, payload))
		if c.atEnd {
			f.Add(uint8(i), append(payload, sum...))
		} else {
			f.Add(uint8(i), append(sum, payload...))
		}
	}
	f.Add(uint8(len(ds)), encBase64(compData(100, 1)))
	all := make([]Decoder, 0, len(fuzzChecksumConfigs))
	for _, c := range fuzzChecksumConfigs {
		all = append(all, compNew(f, c))
	}
	p := fuzzPool(f)
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		d := all[int(which)%len(all)]
		fuzzCheck(t, p, d, src, 1<<12)
		fuzzCheck(t, p, d, src, 16)
	})
}

// fuzzPipelines are v2 compressor + filter chains of the codecs above.
// Encoding runs the filters in list order, then the compressor.
var fuzzPipelines = []struct {
	compressor string
	filters    []string
}{
	{`{"id":"zlib"}`, []string{`{"id":"crc32"}`}},
	{`{"id":"gzip"}`, []string{`{"id":"crc32c"}`, `{"id":"adler32"}`}},
	{`{"id":"zstd"}`, []string{`{"id":"base64"}`, `{"id":"fletcher32"}`}},
	{`{"id":"crc32"}`, []string{`{"id":"zlib"}`}},
}

func FuzzPipeline(f *testing.F) {
	var ds []Decoder
	for _, pl := range fuzzPipelines {
		var filters [][]byte
		for _, fl := range pl.filters {
			filters = append(filters, []byte(fl))
		}
		d, err := V2([]byte(pl.compressor), fuzzRaw(filters))
		if err != nil {
			f.Fatal(err)
		}
		ds = append(ds, d)
	}
	// Seeds: payloads encoded through each chain, filters first.
	payload := compData(3000, 13)
	crc := func(p []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, checksumOf(f, `{"id":"crc32"}`, p)), p...)
	}
	crcEnd := func(id string) func([]byte) []byte {
		return func(p []byte) []byte { return binary.LittleEndian.AppendUint32(bytes.Clone(p), checksumOf(f, id, p)) }
	}
	adler := func(p []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, checksumOf(f, `{"id":"adler32"}`, p)), p...)
	}
	f.Add(uint8(0), encZlib(6)(crc(payload)))
	f.Add(uint8(1), encGzip(6)(adler(crcEnd(`{"id":"crc32c"}`)(payload))))
	f.Add(uint8(2), encZstd()(crcEnd(`{"id":"fletcher32"}`)(encBase64(payload))))
	f.Add(uint8(3), crc(encZlib(6)(payload)))
	p := fuzzPool(f)
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		d := ds[int(which)%len(ds)]
		fuzzCheck(t, p, d, src, 4096)
		fuzzCheck(t, p, d, src, 3000)
	})
}

func fuzzRaw(bs [][]byte) (r []json.RawMessage) {
	for _, b := range bs {
		r = append(r, b)
	}
	return r
}

func checksumOf(t testing.TB, config string, p []byte) uint32 {
	c := compNew(t, config).(*checksumCodec)
	return c.sum(c.prefix, p)
}

// TestFuzzPipelineSeeds checks that the pipeline seeds are real encodings:
// they must round-trip.
func TestFuzzPipelineSeeds(t *testing.T) {
	payload := compData(3000, 13)
	for i, pl := range fuzzPipelines[:3] {
		var filters []json.RawMessage
		for _, fl := range pl.filters {
			filters = append(filters, json.RawMessage(fl))
		}
		d, err := V2([]byte(pl.compressor), filters)
		if err != nil {
			t.Fatal(err)
		}
		var src []byte
		switch i {
		case 0:
			src = encZlib(6)(append(binary.LittleEndian.AppendUint32(nil, checksumOf(t, `{"id":"crc32"}`, payload)), payload...))
		case 1:
			inner := binary.LittleEndian.AppendUint32(bytes.Clone(payload), checksumOf(t, `{"id":"crc32c"}`, payload))
			src = encGzip(6)(append(binary.LittleEndian.AppendUint32(nil, checksumOf(t, `{"id":"adler32"}`, inner)), inner...))
		case 2:
			b64 := encBase64(payload)
			src = encZstd()(binary.LittleEndian.AppendUint32(b64, checksumOf(t, `{"id":"fletcher32"}`, b64)))
		}
		got, err := DecodeFull(d, make([]byte, 0, len(payload)), src)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("pipeline %d: %v", i, err)
		}
	}
}
