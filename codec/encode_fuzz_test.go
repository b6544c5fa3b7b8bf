package codec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzEncode: for every encoder (encodeConfigs) and element size, encoding
// random input and decoding it with the decoder of the same configuration
// is the identity; the encoder stays within MaxEncodedLen and writes
// nothing past cap(dst), with room to spare or too little.
func FuzzEncode(f *testing.F) {
	for i := range encodeConfigs {
		f.Add(uint8(i), uint8(3), compData(300, uint64(i)))
	}
	f.Add(uint8(0), uint8(0), []byte{})
	f.Add(uint8(1), uint8(7), compData(5000, 1))
	type codecs struct {
		d Decoder
		e [17]Encoder // by item size 1..16, and 300 (over Blosc's 255)
	}
	all := make([]codecs, len(encodeConfigs))
	for i, config := range encodeConfigs {
		d, err := New(json.RawMessage(config))
		if err != nil {
			f.Fatal(err)
		}
		all[i].d = d
		for k := range all[i].e {
			size := k + 1
			if k == 16 {
				size = 300
			}
			if all[i].e[k], err = NewEncoder(json.RawMessage(config), size); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which, itemSize uint8, src []byte) {
		i := int(which) % len(encodeConfigs)
		if !decodable(encodeConfigs[i], len(src)) {
			return
		}
		c, e := all[i], all[i].e[int(itemSize)%len(all[i].e)]
		bound := e.MaxEncodedLen(len(src))
		enc := encodeCheck(t, e, src, bound)
		if enc == nil {
			t.Fatalf("%s: no output with MaxEncodedLen (%d) of room", encodeConfigs[i], bound)
		}
		got, err := c.d.Decode(make([]byte, 0, len(src)), enc)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%s: decoding the encoding gives %d bytes, %v; want the %d input bytes", encodeConfigs[i], len(got), err, len(src))
		}
		if small := encodeCheck(t, e, src, len(enc)/2); small != nil && !bytes.Equal(small, enc) {
			t.Fatalf("%s: with less room, different output", encodeConfigs[i])
		}
	})
}
