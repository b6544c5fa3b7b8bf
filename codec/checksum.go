package codec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"slices"
)

func init() {
	register("crc32", newChecksum("crc32", false, func(_, p []byte) uint32 { return crc32.ChecksumIEEE(p) }))
	register("adler32", newChecksum("adler32", false, func(_, p []byte) uint32 { return adler32.Checksum(p) }))
	register("crc32c", newChecksum("crc32c", true, func(_, p []byte) uint32 { return crc32.Checksum(p, castagnoli) }))
	register("fletcher32", newFletcher32)
	register("jenkins_lookup3", newJenkins)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A checksumCodec is a numcodecs checksum codec: the payload with a 4-byte
// little-endian checksum before it (crc32, adler32 by default) or after it
// (crc32c, fletcher32, jenkins_lookup3; "location": "end"). Decode
// verifies the checksum (ErrChecksum on mismatch) and appends the payload.
// A checksumCodec is safe for concurrent use.
type checksumCodec struct {
	id     string
	atEnd  bool
	prefix []byte // hashed in front of the payload (jenkins_lookup3 only); read-only
	sum    func(prefix, payload []byte) uint32
}

var (
	_ Decoder      = (*checksumCodec)(nil)
	_ EncodedSizer = (*checksumCodec)(nil)
)

// newChecksum builds the constructor of a Checksum32 subclass of
// numcodecs (≥0.14 accepts "location"; older configs never carry it).
func newChecksum(id string, atEnd bool, sum func(prefix, payload []byte) uint32) func(Config) (Decoder, error) {
	return func(c Config) (Decoder, error) {
		def := "start"
		if atEnd {
			def = "end"
		}
		loc, err := c.String("location", def)
		if err != nil {
			return nil, err
		}
		if loc != "start" && loc != "end" {
			return nil, fmt.Errorf("%w: checksum location %q", ErrConfig, loc)
		}
		return &checksumCodec{id: id, atEnd: loc == "end", sum: sum}, nil
	}
}

func newFletcher32(c Config) (Decoder, error) {
	if c.Has("location") {
		return nil, fmt.Errorf("%w: fletcher32 takes no location", ErrConfig)
	}
	return &checksumCodec{id: "fletcher32", atEnd: true, sum: func(_, p []byte) uint32 { return fletcher32(p) }}, nil
}

// newJenkins reads "initval" (uint32, default 0) and "prefix": null, or the
// bytes as a list of integers (numpy's tolist of numcodecs' uint8 prefix).
func newJenkins(c Config) (Decoder, error) {
	if c.Has("location") {
		return nil, fmt.Errorf("%w: jenkins_lookup3 takes no location", ErrConfig)
	}
	init, err := c.Int("initval", 0)
	if err != nil {
		return nil, err
	}
	if init < 0 || init > 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: jenkins_lookup3 initval %d", ErrConfig, init)
	}
	var prefix []byte
	if c.Has("prefix") {
		var ints []int
		if err := json.Unmarshal(c["prefix"], &ints); err != nil {
			return nil, fmt.Errorf("%w: jenkins_lookup3 prefix must be a list of byte values: %v", ErrConfig, err)
		}
		for _, v := range ints {
			if v < 0 || v > 255 {
				return nil, fmt.Errorf("%w: jenkins_lookup3 prefix byte %d", ErrConfig, v)
			}
			prefix = append(prefix, byte(v))
		}
	}
	iv := uint32(init)
	sum := func(prefix, p []byte) uint32 {
		if len(prefix) == 0 {
			return jenkinsLookup3(p, iv)
		}
		return jenkinsLookup3(slices.Concat(prefix, p), iv)
	}
	return &checksumCodec{id: "jenkins_lookup3", atEnd: true, prefix: prefix, sum: sum}, nil
}

// Decode verifies src's checksum and appends its payload to dst.
func (c *checksumCodec) Decode(dst, src []byte) ([]byte, error) {
	if len(src) < 4 {
		return dst, fmt.Errorf("%w: %s: %d bytes, shorter than the checksum", ErrCorrupt, c.id, len(src))
	}
	payload, stored := src[4:], src[:4]
	if c.atEnd {
		payload, stored = src[:len(src)-4], src[len(src)-4:]
	}
	if len(payload) > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	want := binary.LittleEndian.Uint32(stored)
	if got := c.sum(c.prefix, payload); got != want {
		return dst, fmt.Errorf("%w: %s stored %#08x, computed %#08x", ErrChecksum, c.id, want, got)
	}
	return append(dst, payload...), nil
}

// EncodedLen is n plus the 4 checksum bytes.
func (c *checksumCodec) EncodedLen(n int) (int, error) { return n + 4, nil }
