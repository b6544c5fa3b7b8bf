package zarr

import (
	"fmt"
	"testing"
)

// TestCompressor: Array.Compressor names the codec that Decoder applies
// first, in numcodecs form, for v2 and v3 (unsharded, sharded, --as-v2),
// and is nil where no bytes→bytes codec decodes first.
func TestCompressor(t *testing.T) {
	v2 := func(compressor, filters string) []byte {
		return []byte(`{"zarr_format": 2, "shape": [10], "chunks": [4], "dtype": "<i2", "order": "C",
			"fill_value": 0, "compressor": ` + compressor + `, "filters": ` + filters + `}`)
	}
	bytesLE := `{"name":"bytes","configuration":{"endian":"little"}}`
	sharded := func(inner, outer string) string {
		return `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":[` + inner +
			`],"index_codecs":[` + bytesLE + `,{"name":"crc32c"}]}}` + outer + `]`
	}
	for _, tt := range []struct {
		name     string
		doc      []byte
		asV2     bool
		id       string // "": Compressor is nil
		cname    string // blosc: the cname Compressor holds
		shuffle  int    // blosc: the shuffle Compressor holds (numcodecs' number)
		decoder  string // the type Decoder returns, when the router must see it ("" not checked)
		passThru bool
	}{
		{name: "v2 blosc", doc: v2(`{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0}`, `null`),
			id: "blosc", cname: "lz4", shuffle: 1, decoder: "codec.Blosc"},
		{name: "v2 lz4", doc: v2(`{"id":"lz4","acceleration":1}`, `null`), id: "lz4", decoder: "codec.LZ4"},
		{name: "v2 zstd and delta", doc: v2(`{"id":"zstd","level":3}`, `[{"id":"delta","dtype":"<i2"}]`), id: "zstd"},
		{name: "v2 uncompressed", doc: v2(`null`, `null`)},
		{name: "v2 filters only", doc: v2(`null`, `[{"id":"delta","dtype":"<i2"}]`)},
		{name: "v2 unknown codec", doc: v2(`{"id":"nope"}`, `null`), passThru: true},
		{name: "v3 blosc", doc: v3Doc(map[string]string{"codecs": `[` + bytesLE +
			`,{"name":"blosc","configuration":{"cname":"lz4","clevel":5,"shuffle":"bitshuffle","typesize":2,"blocksize":0}}]`}),
			id: "blosc", cname: "lz4", shuffle: 2, decoder: "codec.Blosc"},
		{name: "v3 blosc as v2", asV2: true, doc: v3Doc(map[string]string{"codecs": `[` + bytesLE +
			`,{"name":"blosc","configuration":{"cname":"zstd","clevel":5,"shuffle":"noshuffle","typesize":2,"blocksize":0}}]`}),
			id: "blosc", cname: "zstd", shuffle: 0, decoder: "codec.Blosc"},
		{name: "v3 numcodecs.lz4", doc: v3Doc(map[string]string{"codecs": `[` + bytesLE + `,{"name":"numcodecs.lz4","configuration":{"acceleration":1}}]`}),
			id: "lz4", decoder: "codec.LZ4"},
		{name: "v3 zstd then crc32c", doc: v3Doc(map[string]string{"codecs": `[` + bytesLE + `,{"name":"zstd","configuration":{"level":0,"checksum":false}},{"name":"crc32c"}]`}),
			id: "crc32c"}, // decodes first: the checksum
		{name: "v3 bytes only", doc: v3Doc(map[string]string{"codecs": `[` + bytesLE + `]`}), decoder: "codec.Raw"},
		{name: "v3 sharded, blosc inner", doc: v3Doc(map[string]string{"codecs": sharded(bytesLE+
			`,{"name":"blosc","configuration":{"cname":"lz4hc","clevel":5,"shuffle":"shuffle","typesize":2,"blocksize":0}}`, ``)}),
			id: "blosc", cname: "lz4hc", shuffle: 1, decoder: "codec.Blosc"},
		{name: "v3 sharded, zstd over the shard", doc: v3Doc(map[string]string{"codecs": sharded(bytesLE,
			`,{"name":"zstd","configuration":{"level":0,"checksum":false}}`)}), decoder: "codec.Raw"}, // inner chunks are raw
		{name: "v3 unknown codec", doc: v3Doc(map[string]string{"codecs": `[` + bytesLE + `,{"name":"nope"}]`}), passThru: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a *Array
			var err error
			if tt.doc[len(`{"zarr_format": `)] == '2' {
				a, err = ParseV2(tt.doc)
			} else {
				a, _, err = ParseV3(tt.doc)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.asV2 {
				if a, err = a.AsV2(); err != nil {
					t.Fatal(err)
				}
			}
			if (a.PassThrough != nil) != tt.passThru {
				t.Fatalf("PassThrough %v", a.PassThrough)
			}
			if d := fmt.Sprintf("%T", a.Decoder()); tt.decoder != "" && d != tt.decoder {
				t.Errorf("Decoder() is a %s, want %s", d, tt.decoder)
			}
			c := a.Compressor()
			if tt.id == "" {
				if c != nil {
					t.Fatalf("Compressor() = %v, want nil", c)
				}
				return
			}
			if got := c.ID(); got != tt.id {
				t.Errorf("id %q, want %q", got, tt.id)
			}
			if tt.cname == "" {
				return
			}
			cname, err1 := c.String("cname", "")
			shuffle, err2 := c.Int("shuffle", -9)
			if err1 != nil || err2 != nil || cname != tt.cname || shuffle != tt.shuffle {
				t.Errorf("cname %q shuffle %d (%v, %v), want %q %d", cname, shuffle, err1, err2, tt.cname, tt.shuffle)
			}
		})
	}
}
