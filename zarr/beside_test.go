package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

func TestPresentBeside(t *testing.T) {
	type set = map[string]string
	v2keys := `{"name":"v2","configuration":{"separator":"."}}`
	// The .zarray: int16 [10] in chunks of 4, zstd, fill 0, as v3Doc's
	// defaults say, but with v2 chunk keys.
	zarray := func(set set) []byte {
		m := map[string]json.RawMessage{
			"zarr_format": json.RawMessage(`2`), "shape": json.RawMessage(`[10]`), "chunks": json.RawMessage(`[4]`),
			"dtype": json.RawMessage(`"<i2"`), "compressor": json.RawMessage(`{"id":"zstd","level":0}`),
			"fill_value": json.RawMessage(`0`), "order": json.RawMessage(`"C"`), "filters": json.RawMessage(`null`),
		}
		return docWith(m, set)
	}
	twoD := set{"shape": `[5,6]`, "chunk_grid": `{"name":"regular","configuration":{"chunk_shape":[2,4]}}`, "chunk_key_encoding": v2keys}
	twoDv2 := set{"shape": `[5,6]`, "chunks": `[2,4]`}
	with := func(s set, kv ...string) set {
		out := set{}
		for k, v := range s {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	bytesZstd := `{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}`
	tests := []struct {
		name   string
		v3, v2 set
		codecs string // the presented codecs, compact
		err    error
	}{
		{"same", set{"chunk_key_encoding": v2keys}, set{}, `[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"filters", set{"chunk_key_encoding": v2keys, "codecs": `[{"name":"numcodecs.delta","configuration":{"dtype":"<i2"}},` + bytesZstd + `]`},
			set{"filters": `[{"id":"delta","dtype":"<i2"}]`}, `[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"slash keys", set{"chunk_key_encoding": `{"name":"v2","configuration":{"separator":"/"}}`}, set{"dimension_separator": `"/"`},
			`[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"big endian", set{"chunk_key_encoding": v2keys, "codecs": `[{"name":"bytes","configuration":{"endian":"big"}}]`}, set{"dtype": `">i2"`},
			`[{"name":"bytes","configuration":{"endian":"big"}}]`, nil},
		{"one byte", set{"chunk_key_encoding": v2keys, "data_type": `"uint8"`, "codecs": `["bytes"]`}, set{"dtype": `"|u1"`}, `[{"name":"bytes"}]`, nil},
		{"one byte, an order", set{"chunk_key_encoding": v2keys, "data_type": `"int8"`, "codecs": `["bytes"]`}, set{"dtype": `"<i1"`}, `[{"name":"bytes"}]`, nil},
		{"bool", set{"chunk_key_encoding": v2keys, "data_type": `"bool"`, "fill_value": `false`, "codecs": `["bytes"]`},
			set{"dtype": `"|b1"`, "fill_value": `false`}, `[{"name":"bytes"}]`, nil},
		{"F order", with(twoD, "codecs", `[{"name":"transpose","configuration":{"order":[1,0]}},`+bytesZstd+`]`), with(twoDv2, "order", `"F"`),
			`[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"F order, named", with(twoD, "codecs", `[{"name":"transpose","configuration":{"order":"F"}},`+bytesZstd+`]`), with(twoDv2, "order", `"F"`),
			`[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"F order, one axis", set{"chunk_key_encoding": v2keys}, set{"order": `"F"`}, `[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"two transposes, C", with(twoD, "codecs", `[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"transpose","configuration":{"order":[1,0]}},`+bytesZstd+`]`), twoDv2,
			`[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"NaN fill", set{"chunk_key_encoding": v2keys, "data_type": `"float32"`, "fill_value": `"0x7fc00001"`}, set{"dtype": `"<f4"`, "fill_value": `"NaN"`},
			`[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"fill written differently", set{"chunk_key_encoding": v2keys, "data_type": `"float64"`, "fill_value": `1`}, set{"dtype": `"<f8"`, "fill_value": `1.0`},
			`[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"no fill in .zarray", set{"chunk_key_encoding": v2keys, "fill_value": `null`}, set{"fill_value": ``}, `[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},

		{"default keys", set{}, set{}, "", ErrDisagree},
		{"other separator", with(twoD, "chunk_key_encoding", `{"name":"v2","configuration":{"separator":"/"}}`), twoDv2, "", ErrDisagree},
		{"one axis, either separator", set{"chunk_key_encoding": `{"name":"v2","configuration":{"separator":"/"}}`}, set{},
			`[{"name":"bytes","configuration":{"endian":"little"}}]`, nil},
		{"shape", set{"chunk_key_encoding": v2keys, "shape": `[11]`}, set{}, "", ErrDisagree},
		{"chunk shape", set{"chunk_key_encoding": v2keys}, set{"chunks": `[5]`}, "", ErrDisagree},
		{"data type", set{"chunk_key_encoding": v2keys, "data_type": `"uint16"`}, set{}, "", ErrDisagree},
		{"byte order", set{"chunk_key_encoding": v2keys}, set{"dtype": `">i2"`}, "", ErrDisagree},
		{"order", twoD, with(twoDv2, "order", `"F"`), "", ErrDisagree},
		{"other transpose", with(set{"shape": `[2,3,4]`, "chunk_grid": `{"name":"regular","configuration":{"chunk_shape":[2,3,4]}}`, "chunk_key_encoding": v2keys},
			"codecs", `[{"name":"transpose","configuration":{"order":[1,0,2]}},`+bytesZstd+`]`), set{"shape": `[2,3,4]`, "chunks": `[2,3,4]`, "order": `"F"`}, "", ErrDisagree},
		{"fill", set{"chunk_key_encoding": v2keys, "fill_value": `1`}, set{}, "", ErrDisagree},
		{"sharded", set{"chunk_key_encoding": v2keys, "codecs": `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":["bytes"],"index_codecs":["bytes"]}}]`},
			set{}, "", ErrDisagree},
		{"group", set{"node_type": `"group"`}, set{}, "", ErrDisagree},
		{"unknown codec", set{"chunk_key_encoding": v2keys, "codecs": `["bytes","nonesuch"]`}, set{}, "", codec.ErrUnknownCodec},
		{"invalid", set{"zarr_format": `2`}, set{}, "", ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v2, err := ParseV2(zarray(tt.v2))
			if err != nil {
				t.Fatal(err)
			}
			doc := v3Doc(tt.v3)
			got, err := PresentBeside(doc, v2)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("PresentBeside = %s, %v; want %v", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var m, stored map[string]json.RawMessage
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(doc, &stored)
			var codecs bytes.Buffer
			json.Compact(&codecs, m["codecs"])
			if codecs.String() != tt.codecs {
				t.Errorf("codecs %s, want %s", codecs.String(), tt.codecs)
			}
			for k, v := range stored { // everything else as stored
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(m[k], &b)
				if ja, jb := mustJSON(t, a), mustJSON(t, b); k != "codecs" && ja != jb {
					t.Errorf("%s: %s, stored %s", k, jb, ja)
				}
			}
			// The presented document describes raw chunks of the same
			// array, in the .zarray's memory order.
			a, _, err := ParseV3(got)
			if err != nil {
				t.Fatal(err)
			}
			if _, raw := a.Decoder().(codec.Raw); v2.Order == "C" && !raw || !a.dt.sameElements(v2.dt) || a.ChunkLen() != v2.ChunkLen() {
				t.Errorf("presented: %s decoder %T, chunk %d bytes; .zarray: %s, %d", a.DType, a.Decoder(), a.ChunkLen(), v2.DType, v2.ChunkLen())
			}
		})
	}
}

// FuzzPresentBeside: any pair of documents gives a presented zarr.json or
// an error, never a panic; a presented one parses, as a raw array of the
// .zarray's shape, data type and chunk size.
func FuzzPresentBeside(f *testing.F) {
	v2keys := `{"name":"v2","configuration":{"separator":"."}}`
	f.Add([]byte(`{"zarr_format":2,"shape":[10],"chunks":[4],"dtype":"<i2","compressor":{"id":"zstd"},"fill_value":0,"order":"C","filters":null}`),
		v3Doc(map[string]string{"chunk_key_encoding": v2keys}))
	f.Add([]byte(`{"zarr_format":2,"shape":[5,6],"chunks":[2,4],"dtype":">f8","compressor":null,"fill_value":"NaN","order":"F","filters":null}`),
		v3Doc(map[string]string{"chunk_key_encoding": v2keys, "shape": `[5,6]`, "data_type": `"float64"`, "fill_value": `"NaN"`,
			"chunk_grid": `{"name":"regular","configuration":{"chunk_shape":[2,4]}}`,
			"codecs":     `[{"name":"transpose","configuration":{"order":"F"}},{"name":"bytes","configuration":{"endian":"big"}}]`}))
	f.Fuzz(func(t *testing.T, zarray, zarrJSON []byte) {
		v2, err := ParseV2(zarray)
		if err != nil || v2.PassThrough != nil {
			return
		}
		got, err := PresentBeside(zarrJSON, v2)
		if err != nil {
			return
		}
		a, _, err := ParseV3(got)
		if err != nil || a == nil {
			t.Fatalf("presented %s does not parse as an array: %v", got, err)
		}
		if a.PassThrough != nil || !a.dt.sameElements(v2.dt) || a.ChunkLen() != v2.ChunkLen() || len(a.Shape) != len(v2.Shape) {
			t.Fatalf("presented %s: %s, %d bytes per chunk, %v; .zarray %s, %d", got, a.DType, a.ChunkLen(), a.PassThrough, v2.DType, v2.ChunkLen())
		}
	})
}
