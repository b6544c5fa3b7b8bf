package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
)

func TestRaw(t *testing.T) {
	src := []byte("chunk")
	if got, err := DecodeFull(Raw{}, make([]byte, 0, 5), src); err != nil || string(got) != "chunk" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := (Raw{}).Decode(make([]byte, 0, 4), src); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte short: %v", err)
	}
	if n, _ := (Raw{}).EncodedLen(7); n != 7 {
		t.Fatalf("EncodedLen(7) = %d", n)
	}
}

func TestChain(t *testing.T) {
	if _, ok := Chain().(Raw); !ok {
		t.Fatalf("Chain() is %T, want Raw", Chain())
	}
	z := compNew(t, `{"id":"zlib"}`)
	if Chain(z) != z {
		t.Fatalf("Chain of one stage is not that stage")
	}
	if _, ok := Chain(z, Raw{}).(*Pipeline); !ok {
		t.Fatalf("Chain of two is not a Pipeline")
	}
	crc := compNew(t, `{"id":"crc32"}`)
	if p, ok := Chain(z, Chain(crc, Raw{}), crc).(*Pipeline); !ok || len(p.Stages) != 4 || p.Stages[1] != crc || p.Stages[3] != crc {
		t.Fatalf("a Pipeline inside Chain is not spliced in: %#v", p)
	}
}

// TestPipelineGrows decodes through a compressor whose output, another
// compressor's stream, is more than slack of its input: the buffer between
// them must grow, up to the bound the room in dst gives.
func TestPipelineGrows(t *testing.T) {
	payload := bytes.Repeat([]byte("zfuse grows "), 100000)
	src := encZstd()(encZlib(0)(payload)) // zlib's stored blocks, which zstd shrinks a hundredfold
	if len(src)*10 > len(payload) {
		t.Fatalf("zstd of stored zlib blocks is %d bytes, want far less than %d", len(src), len(payload))
	}
	d, err := V2(json.RawMessage(`{"id":"zstd"}`), []json.RawMessage{json.RawMessage(`{"id":"zlib"}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeFull(d, make([]byte, 0, len(payload)), src)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("decoded %d bytes, %v; want the %d-byte payload", len(got), err, len(payload))
	}
	if _, err := d.Decode(make([]byte, 0, len(payload)-1), src); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte short: %v, want ErrTooLarge", err)
	}
}

// TestDecodeBounded decodes without knowing the decoded size: a checksum's
// output fits the first try (len(src)), a compressor's grows to its size,
// and a limit below it fails.
func TestDecodeBounded(t *testing.T) {
	payload := compData(100000, 3)
	crc := compNew(t, `{"id":"crc32"}`)
	src := v2Encode(t, payload, []string{`{"id":"crc32"}`}, nil)
	got, err := DecodeBounded(crc, src, 1<<20)
	if err != nil || !bytes.Equal(got, payload) || cap(got) != len(src) {
		t.Fatalf("crc32: %d bytes (cap %d), %v; want %d (cap %d)", len(got), cap(got), err, len(payload), len(src))
	}
	z := compNew(t, `{"id":"zlib"}`)
	src = encZlib(9)(payload)
	if got, err := DecodeBounded(z, src, 1<<20); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("zlib: %d bytes, %v; want %d", len(got), err, len(payload))
	}
	if _, err := DecodeBounded(z, src, len(payload)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("zlib with a limit one byte short: %v, want ErrTooLarge", err)
	}
}

// v2Encode encodes payload as zarr-python 2 would: the filters in list
// order (here checksums, which add 4 bytes before or after), then the
// compressor.
func v2Encode(t testing.TB, payload []byte, filters []string, compress func([]byte) []byte) []byte {
	b := payload
	for _, f := range filters {
		c := compNew(t, f).(*checksumCodec)
		sum := binary.LittleEndian.AppendUint32(nil, c.sum(c.prefix, b))
		if c.atEnd {
			b = append(bytes.Clone(b), sum...)
		} else {
			b = append(sum, b...)
		}
	}
	if compress != nil {
		b = compress(b)
	}
	return b
}

func TestV2(t *testing.T) {
	payload := compData(10000, 14)
	raw := func(ss ...string) []json.RawMessage {
		var r []json.RawMessage
		for _, s := range ss {
			r = append(r, json.RawMessage(s))
		}
		return r
	}
	tests := []struct {
		name       string
		compressor string
		filters    []string
		compress   func([]byte) []byte
	}{
		{"no compressor, no filters", ``, nil, nil},
		{"null compressor", `null`, nil, nil},
		{"compressor only", `{"id":"zlib"}`, nil, encZlib(1)},
		{"filters only", `null`, []string{`{"id":"crc32"}`, `{"id":"adler32","location":"end"}`}, nil},
		{"three filters, reversed on decode", `{"id":"gzip"}`,
			[]string{`{"id":"crc32"}`, `{"id":"crc32c"}`, `{"id":"adler32"}`}, encGzip(1)},
		{"compressor as a filter", `{"id":"zstd"}`, nil, func(b []byte) []byte { return encZstd()(encZlib(1)(b)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			filters := raw(tt.filters...)
			compress := tt.compress
			if tt.name == "compressor as a filter" {
				filters = raw(`{"id":"zlib"}`)
			}
			d, err := V2(json.RawMessage(tt.compressor), filters)
			if err != nil {
				t.Fatal(err)
			}
			src := v2Encode(t, payload, tt.filters, compress)
			compCheck(t, d, src, payload, len(tt.filters) > 0)
		})
	}
	// Filters in the wrong order must not decode.
	src := v2Encode(t, payload, []string{`{"id":"crc32"}`, `{"id":"adler32"}`}, nil)
	d, _ := V2(nil, raw(`{"id":"adler32"}`, `{"id":"crc32"}`))
	if _, err := d.Decode(make([]byte, 0, len(payload)), src); !errors.Is(err, ErrChecksum) {
		t.Fatalf("filters applied in list order: %v, want ErrChecksum", err)
	}
}

func TestV2Errors(t *testing.T) {
	tests := []struct {
		compressor string
		filters    []string
		err        error
	}{
		{`{"id":"nosuch"}`, nil, ErrUnknownCodec},
		{`null`, []string{`{"id":"vlen-utf8"}`}, ErrNotRaw},
		{`{"id":"zstd"}`, []string{`{"id":"categorize","labels":["a"],"dtype":"<U1","astype":"|u1"}`}, ErrNotRaw},
		{`{"id":"zlib"}`, []string{`{"id":"crc32","location":"nowhere"}`}, ErrConfig},
		{`[1]`, nil, ErrConfig},
	}
	for _, tt := range tests {
		var filters []json.RawMessage
		for _, f := range tt.filters {
			filters = append(filters, json.RawMessage(f))
		}
		if _, err := V2(json.RawMessage(tt.compressor), filters); !errors.Is(err, tt.err) {
			t.Errorf("V2(%s, %s) = %v, want %v", tt.compressor, tt.filters, err, tt.err)
		}
	}
}

func TestPipelineEncodedLen(t *testing.T) {
	d := Chain(compNew(t, `{"id":"crc32"}`), compNew(t, `{"id":"base64"}`), compNew(t, `{"id":"adler32"}`))
	n, err := d.(*Pipeline).EncodedLen(10)
	// adler32: 14; base64 of 14: 20; crc32: 24.
	if err != nil || n != 24 {
		t.Fatalf("EncodedLen(10) = %d, %v; want 24", n, err)
	}
	d = Chain(compNew(t, `{"id":"zstd"}`), compNew(t, `{"id":"crc32"}`))
	if _, err := d.(*Pipeline).EncodedLen(10); !errors.Is(err, ErrConfig) {
		t.Fatalf("EncodedLen through a compressor: %v, want ErrConfig", err)
	}
}

func TestDecodeFullShort(t *testing.T) {
	if _, err := DecodeFull(Raw{}, make([]byte, 0, 6), []byte("chunk")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("5 bytes for a 6-byte chunk: %v, want ErrCorrupt", err)
	}
}

// TestPipelineBuffers decodes large and small chunks in turn through one
// pipeline, so that pooled intermediate buffers are reused across sizes.
func TestPipelineBuffers(t *testing.T) {
	d, err := V2(json.RawMessage(`{"id":"zlib"}`), []json.RawMessage{json.RawMessage(`{"id":"crc32"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{1 << 20, 10, 1 << 20, 3, 500000, 0} {
		payload := compData(n, uint64(i))
		src := v2Encode(t, payload, []string{`{"id":"crc32"}`}, encZlib(1))
		got, err := DecodeFull(d, make([]byte, 0, n), src)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("chunk %d (%d bytes): %v", i, n, err)
		}
	}
}

func BenchmarkPipeline(b *testing.B) {
	const n = 1 << 20
	payload := compData(n, 15)
	src := v2Encode(b, payload, []string{`{"id":"crc32"}`}, encZstd())
	d, err := V2(json.RawMessage(`{"id":"zstd"}`), []json.RawMessage{json.RawMessage(`{"id":"crc32"}`)})
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, n)
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFull(d, dst, src); err != nil {
			b.Fatal(err)
		}
	}
}
