package codec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"

	"github.com/ulikunitz/xz/lzma"
)

// The .xz container (xz-file-format 1.2.0), read here rather than by
// ulikunitz/xz's Reader so that each block's LZMA2 dictionary can be
// bounded by the room left in dst: xz.Reader allocates the dictionary the
// block header names (8 MiB at the default preset 6, 64 MiB at preset 9),
// however small the chunk. The LZMA2 data itself is decoded by
// ulikunitz/xz/lzma.

var xzMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}

var xzCRC64 = crc64.MakeTable(crc64.ECMA) // CRC-64/XZ

// xzCorrupt is the error for malformed .xz structure.
func xzCorrupt(what string) error { return fmt.Errorf("%w: xz: %s", ErrCorrupt, what) }

// xzDecode appends the decoded xz streams in src to dst without growing
// it. Streams may be concatenated, with zero padding (a multiple of four
// bytes) after each.
func xzDecode(dst, src []byte) ([]byte, error) {
	out := dst
	for n := 0; ; n++ {
		if n > 0 {
			z := 0
			for z < len(src) && src[z] == 0 {
				z++
			}
			if z%4 != 0 {
				return dst, xzCorrupt("stream padding")
			}
			if src = src[z:]; len(src) == 0 {
				return out, nil
			}
		}
		var err error
		if out, src, err = xzStream(out, src); err != nil {
			return dst, err
		}
	}
}

// xzRecord is one index record: a block's unpadded and uncompressed sizes.
type xzRecord struct{ unpadded, size uint64 }

// xzStream decodes one stream and returns what follows it.
func xzStream(out, src []byte) ([]byte, []byte, error) {
	const headerLen = 12
	if len(src) < headerLen {
		return out, src, xzCorrupt("stream header truncated")
	}
	if !bytes.Equal(src[:6], xzMagic) {
		return out, src, xzCorrupt("not an xz stream")
	}
	flags := src[6:8]
	if flags[0] != 0 || flags[1]&0xF0 != 0 {
		return out, src, xzCorrupt("unsupported stream flags")
	}
	if crc32.ChecksumIEEE(flags) != binary.LittleEndian.Uint32(src[8:]) {
		return out, src, fmt.Errorf("%w: xz stream header", ErrChecksum)
	}
	check := flags[1] & 0x0F
	p := src[headerLen:]
	var records []xzRecord
	for {
		if len(p) == 0 {
			return out, src, xzCorrupt("truncated before index")
		}
		if p[0] == 0 { // index indicator
			break
		}
		start := len(out)
		var rec xzRecord
		var err error
		if out, p, rec, err = xzBlock(out, p, check); err != nil {
			return out[:start], src, err
		}
		records = append(records, rec)
	}
	rest, indexLen, err := xzIndex(p, records)
	if err != nil {
		return out, src, err
	}
	if len(rest) < headerLen {
		return out, src, xzCorrupt("stream footer truncated")
	}
	footer := rest[:headerLen]
	switch {
	case crc32.ChecksumIEEE(footer[4:10]) != binary.LittleEndian.Uint32(footer):
		return out, src, fmt.Errorf("%w: xz stream footer", ErrChecksum)
	case (uint64(binary.LittleEndian.Uint32(footer[4:]))+1)*4 != uint64(indexLen):
		return out, src, xzCorrupt("backward size does not match the index")
	case !bytes.Equal(footer[8:10], flags):
		return out, src, xzCorrupt("footer flags differ from header flags")
	case footer[10] != 'Y' || footer[11] != 'Z':
		return out, src, xzCorrupt("footer magic")
	}
	return out, rest[headerLen:], nil
}

// xzCheckLen is the size of the check field for each check type; types
// without a known algorithm are skipped unverified, as liblzma does.
var xzCheckLen = [16]int{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}

// xzBlock decodes one block (header, LZMA2 data, padding, check).
func xzBlock(out, p []byte, check byte) ([]byte, []byte, xzRecord, error) {
	var rec xzRecord
	hlen := (int(p[0]) + 1) * 4
	if len(p) < hlen {
		return out, p, rec, xzCorrupt("block header truncated")
	}
	h := p[:hlen]
	if crc32.ChecksumIEEE(h[:hlen-4]) != binary.LittleEndian.Uint32(h[hlen-4:]) {
		return out, p, rec, fmt.Errorf("%w: xz block header", ErrChecksum)
	}
	bflags := h[1]
	if bflags&0x3C != 0 {
		return out, p, rec, xzCorrupt("reserved block flags")
	}
	q := h[2 : hlen-4]
	compressed, size := int64(-1), int64(-1)
	var v uint64
	var err error
	if bflags&0x40 != 0 {
		if v, q, err = xzUvarint(q); err != nil {
			return out, p, rec, err
		}
		compressed = int64(v)
	}
	if bflags&0x80 != 0 {
		if v, q, err = xzUvarint(q); err != nil {
			return out, p, rec, err
		}
		size = int64(v)
		if size > int64(cap(out)-len(out)) {
			return out, p, rec, ErrTooLarge
		}
	}
	var dict int64
	nfilters := int(bflags&3) + 1
	for i := range nfilters {
		var id, plen uint64
		if id, q, err = xzUvarint(q); err != nil {
			return out, p, rec, err
		}
		if plen, q, err = xzUvarint(q); err != nil {
			return out, p, rec, err
		}
		if plen > uint64(len(q)) {
			return out, p, rec, xzCorrupt("filter properties truncated")
		}
		props := q[:plen]
		q = q[plen:]
		if id != lzmaFilterLZMA2 {
			return out, p, rec, fmt.Errorf("%w: xz filter %s is not supported (only LZMA2)", ErrConfig, lzmaFilterName(id))
		}
		if i != nfilters-1 || len(props) != 1 {
			return out, p, rec, xzCorrupt("LZMA2 filter properties")
		}
		if dict, err = lzma.DecodeDictCap(props[0]); err != nil {
			return out, p, rec, both(ErrCorrupt, err)
		}
	}
	for _, b := range q {
		if b != 0 {
			return out, p, rec, xzCorrupt("block header padding")
		}
	}
	data := p[hlen:]
	room := cap(out) - len(out)
	if size >= 0 {
		room = int(size)
	}
	start := len(out)
	res, rest, err := lzma2Stream(out[:start:start+room], data, lzmaDictCap(dict, room))
	if err != nil {
		if errors.Is(err, ErrTooLarge) && size >= 0 {
			err = xzCorrupt("block larger than its header says")
		}
		return out, p, rec, err
	}
	out = out[:len(res)] // res shares out's array; restore the full capacity
	used := len(data) - len(rest)
	if compressed >= 0 && int64(used) != compressed {
		return out, p, rec, xzCorrupt("compressed size differs from block header")
	}
	if size >= 0 && int64(len(out)-start) != size {
		return out, p, rec, xzCorrupt("uncompressed size differs from block header")
	}
	pad := (4 - used%4) % 4
	clen := xzCheckLen[check]
	if len(rest) < pad+clen {
		return out, p, rec, xzCorrupt("block truncated")
	}
	for _, b := range rest[:pad] {
		if b != 0 {
			return out, p, rec, xzCorrupt("block padding")
		}
	}
	if !xzCheckOK(check, out[start:], rest[pad:pad+clen]) {
		return out, p, rec, fmt.Errorf("%w: xz block check", ErrChecksum)
	}
	rec = xzRecord{unpadded: uint64(hlen + used + clen), size: uint64(len(out) - start)}
	return out, rest[pad+clen:], rec, nil
}

// xzCheckOK verifies a block's check field over its decoded bytes.
func xzCheckOK(check byte, data, want []byte) bool {
	switch check {
	case 0x01:
		return crc32.ChecksumIEEE(data) == binary.LittleEndian.Uint32(want)
	case 0x04:
		return crc64.Checksum(data, xzCRC64) == binary.LittleEndian.Uint64(want)
	case 0x0A:
		sum := sha256.Sum256(data)
		return bytes.Equal(sum[:], want)
	}
	return true // none, or a type liblzma would also not verify
}

// xzIndex checks the index (starting at its indicator byte) against the
// blocks read, and returns what follows it and its length.
func xzIndex(p []byte, records []xzRecord) ([]byte, int, error) {
	q := p[1:]
	n, q, err := xzUvarint(q)
	if err != nil {
		return p, 0, err
	}
	if n != uint64(len(records)) {
		return p, 0, xzCorrupt("index record count")
	}
	for _, want := range records {
		var got xzRecord
		if got.unpadded, q, err = xzUvarint(q); err != nil {
			return p, 0, err
		}
		if got.size, q, err = xzUvarint(q); err != nil {
			return p, 0, err
		}
		if got != want {
			return p, 0, xzCorrupt("index record differs from block")
		}
	}
	size := len(p) - len(q)
	pad := (4 - size%4) % 4
	if len(q) < pad+4 {
		return p, 0, xzCorrupt("index truncated")
	}
	for _, b := range q[:pad] {
		if b != 0 {
			return p, 0, xzCorrupt("index padding")
		}
	}
	size += pad
	if crc32.ChecksumIEEE(p[:size]) != binary.LittleEndian.Uint32(p[size:]) {
		return p, 0, fmt.Errorf("%w: xz index", ErrChecksum)
	}
	return p[size+4:], size + 4, nil
}

// xzUvarint reads an xz multibyte integer: little-endian base 128, at
// most 9 bytes, no superfluous trailing zero byte.
func xzUvarint(p []byte) (uint64, []byte, error) {
	var v uint64
	for i := 0; i < 9 && i < len(p); i++ {
		b := p[i]
		v |= uint64(b&0x7F) << (7 * i)
		if b&0x80 == 0 {
			if b == 0 && i > 0 {
				return 0, p, xzCorrupt("non-minimal integer")
			}
			return v, p[i+1:], nil
		}
	}
	return 0, p, xzCorrupt("integer truncated or too long")
}
