package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// Published check values: the CRC catalogue's "123456789" checks, the
// Adler-32 example from its Wikipedia article, and the test vectors of
// numcodecs' test_jenkins.py. (The first test_fletcher32.py vectors,
// "abcdef" -> 1448095018, read 16-bit words little-endian; current numcodecs
// reads them big-endian as HDF5 does, and TestFletcher32Known checks that.)
func TestChecksumVectors(t *testing.T) {
	tests := []struct {
		config string
		data   string
		want   uint32
	}{
		{`{"id":"crc32"}`, "123456789", 0xCBF43926},
		{`{"id":"adler32"}`, "Wikipedia", 0x11E60398},
		{`{"id":"crc32c"}`, "123456789", 0xE3069283},
		{`{"id":"jenkins_lookup3"}`, "", 0xDEADBEEF},
		{`{"id":"jenkins_lookup3","initval":3735928559}`, "", 0xBD5B7DDE},
		{`{"id":"jenkins_lookup3"}`, "Four score and seven years ago", 0x17770551},
		{`{"id":"jenkins_lookup3","initval":1}`, "Four score and seven years ago", 0xCD628161},
		{`{"id":"jenkins_lookup3"}`, "jenkins", 202276345},
		{`{"id":"jenkins_lookup3","initval":1230}`, "Four score and seven years ago", 0x0EE25AD7},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q", tt.config, tt.data), func(t *testing.T) {
			c := compNew(t, tt.config).(*checksumCodec)
			if got := c.sum(c.prefix, []byte(tt.data)); got != tt.want {
				t.Fatalf("checksum %#08x, want %#08x", got, tt.want)
			}
			// Encode as numcodecs does and decode it back.
			enc := binary.LittleEndian.AppendUint32(nil, tt.want)
			if c.atEnd {
				enc = append([]byte(tt.data), enc...)
			} else {
				enc = append(enc, tt.data...)
			}
			got, err := DecodeFull(c, make([]byte, 0, len(tt.data)), enc)
			if err != nil || string(got) != tt.data {
				t.Fatalf("decode: %q, %v", got, err)
			}
		})
	}
}

// TestFletcher32Known is numcodecs' test_known: an HDF5-written buffer of
// ten int64 with its Fletcher-32 suffix.
func TestFletcher32Known(t *testing.T) {
	data := []byte("w\x07\x00\x00\x00\x00\x00\x00\x85\xf6\xff\xff\xff\xff\xff\xff" +
		"i\x07\x00\x00\x00\x00\x00\x00\x94\xf6\xff\xff\xff\xff\xff\xff" +
		"\x88\t\x00\x00\x00\x00\x00\x00i\x03\x00\x00\x00\x00\x00\x00" +
		"\x93\xfd\xff\xff\xff\xff\xff\xff\xc3\xfc\xff\xff\xff\xff\xff\xff" +
		"'\x02\x00\x00\x00\x00\x00\x00\xba\xf7\xff\xff\xff\xff\xff\xff" +
		"\xfd%\x86d")
	got, err := DecodeFull(compNew(t, `{"id":"fletcher32"}`), make([]byte, 0, 80), data)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1911, -2427, 1897, -2412, 2440, 873, -621, -829, 551, -2118}
	for i, w := range want {
		if v := int64(binary.LittleEndian.Uint64(got[8*i:])); v != w {
			t.Fatalf("element %d = %d, want %d", i, v, w)
		}
	}
}

// TestJenkinsPrefix is numcodecs' HDF5 fixed-array data block test: the
// prefix "FADB..." is hashed in front of the payload.
func TestJenkinsPrefix(t *testing.T) {
	index := []byte{}
	for _, v := range []uint64{0x800, 0xff7, 0x17f7, 0xff7, 0x27ee, 0xff7, 0x37e5, 0xff7, 0x47dc, 0xff7,
		0x57d3, 0xff7, 0x67ca, 0xff7, 0x77c1, 0xff7, 0x87b8, 0xff7, 0x97af, 0xff7,
		0xa7a6, 0xff7, 0xb79d, 0xff7, 0xc794, 0xff7, 0xd78b, 0xff7, 0xe782, 0xff7, 0xf779, 0xff7} {
		index = binary.LittleEndian.AppendUint64(index, v)
	}
	src := append(bytes.Clone(index), 'n', 0x96, 0x07, 0x85)
	prefix := []byte("FADB\x00\x01\xcf\x01\x00\x00\x00\x00\x00\x00")
	ints, _ := json.Marshal(bytesToInts(prefix))
	d := compNew(t, `{"id":"jenkins_lookup3","prefix":`+string(ints)+`}`)
	got, err := DecodeFull(d, make([]byte, 0, len(index)), src)
	if err != nil || !bytes.Equal(got, index) {
		t.Fatalf("decode with prefix: %v", err)
	}
	if _, err := compNew(t, `{"id":"jenkins_lookup3"}`).Decode(make([]byte, 0, len(index)), src); !errors.Is(err, ErrChecksum) {
		t.Fatalf("without the prefix: %v, want ErrChecksum", err)
	}
}

func bytesToInts(b []byte) []int {
	r := make([]int, len(b))
	for i, c := range b {
		r[i] = int(c)
	}
	return r
}

func TestChecksumLayout(t *testing.T) {
	payload := compData(1000, 10)
	tests := []struct {
		config string
		atEnd  bool
	}{
		{`{"id":"crc32"}`, false},
		{`{"id":"crc32","location":"end"}`, true},
		{`{"id":"adler32"}`, false},
		{`{"id":"adler32","location":"end"}`, true},
		{`{"id":"crc32c"}`, true},
		{`{"id":"crc32c","location":"start"}`, false},
		{`{"id":"fletcher32"}`, true},
		{`{"id":"jenkins_lookup3","initval":7,"prefix":null}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			c := compNew(t, tt.config).(*checksumCodec)
			sum := binary.LittleEndian.AppendUint32(nil, c.sum(c.prefix, payload))
			enc := append(bytes.Clone(sum), payload...)
			if tt.atEnd {
				enc = append(bytes.Clone(payload), sum...)
			}
			if n, _ := c.EncodedLen(len(payload)); n != len(enc) {
				t.Fatalf("EncodedLen = %d, want %d", n, len(enc))
			}
			compCheck(t, c, enc, payload, true)
			for _, i := range []int{0, len(enc) / 2, len(enc) - 1} {
				if _, err := c.Decode(make([]byte, 0, len(payload)), flipAt(enc, i)); !errors.Is(err, ErrChecksum) {
					t.Fatalf("flipped byte %d: %v, want ErrChecksum", i, err)
				}
			}
			if _, err := c.Decode(make([]byte, 0, 10), enc[:3]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("3 bytes: %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestChecksumConfig(t *testing.T) {
	for _, config := range []string{
		`{"id":"crc32","location":"middle"}`,
		`{"id":"crc32c","location":1}`,
		`{"id":"fletcher32","location":"end"}`,
		`{"id":"jenkins_lookup3","initval":-1}`,
		`{"id":"jenkins_lookup3","initval":4294967296}`,
		`{"id":"jenkins_lookup3","prefix":"FADB"}`,
		`{"id":"jenkins_lookup3","prefix":[256]}`,
	} {
		if _, err := New(json.RawMessage(config)); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%s) = %v, want ErrConfig", config, err)
		}
	}
}

// TestJenkinsAllLengths checks the block loop and the tail against a
// byte-by-byte transcription of lookup3.c's hashlittle switch.
func TestJenkinsAllLengths(t *testing.T) {
	data := compData(64, 11)
	for n := 0; n <= len(data); n++ {
		for _, iv := range []uint32{0, 1, 0xDEADBEEF} {
			if got, want := jenkinsLookup3(data[:n], iv), jenkinsRef(data[:n], iv); got != want {
				t.Fatalf("len %d initval %#x: %#08x, want %#08x", n, iv, got, want)
			}
		}
	}
}

// jenkinsRef follows numcodecs' jenkins.pyx line by line.
func jenkinsRef(k []byte, initval uint32) uint32 {
	length := len(k)
	a := 0xdeadbeef + uint32(length) + initval
	b, c := a, a
	if length == 0 {
		return c
	}
	for length > 12 {
		a += uint32(k[0]) + uint32(k[1])<<8 + uint32(k[2])<<16 + uint32(k[3])<<24
		b += uint32(k[4]) + uint32(k[5])<<8 + uint32(k[6])<<16 + uint32(k[7])<<24
		c += uint32(k[8]) + uint32(k[9])<<8 + uint32(k[10])<<16 + uint32(k[11])<<24
		a, b, c = jenkinsMix(a, b, c)
		length -= 12
		k = k[12:]
	}
	adds := []struct {
		v     *uint32
		shift uint
	}{{&a, 0}, {&a, 8}, {&a, 16}, {&a, 24}, {&b, 0}, {&b, 8}, {&b, 16}, {&b, 24}, {&c, 0}, {&c, 8}, {&c, 16}, {&c, 24}}
	for i := length - 1; i >= 0; i-- {
		*adds[i].v += uint32(k[i]) << adds[i].shift
	}
	return jenkinsFinal(a, b, c)
}

// TestFletcher32Modular checks the folded sums against their definition,
// sums of big-endian 16-bit words (an odd last byte as the high byte) and
// of the running sums, modulo 65535, over lengths that cross the 360-word
// fold.
func TestFletcher32Modular(t *testing.T) {
	data := compData(2000, 12)
	for _, n := range []int{0, 1, 2, 3, 719, 720, 721, 722, 1441, 2000} {
		var s1, s2 uint64
		for i := 0; i < n; i += 2 {
			w := uint64(data[i]) << 8
			if i+1 < n {
				w |= uint64(data[i+1])
			}
			s1 += w
			s2 += s1
		}
		got := fletcher32(data[:n])
		if uint64(got&0xffff)%65535 != s1%65535 || uint64(got>>16)%65535 != s2%65535 {
			t.Fatalf("len %d: %#08x, want sums %#x, %#x mod 65535", n, got, s1%65535, s2%65535)
		}
	}
}
