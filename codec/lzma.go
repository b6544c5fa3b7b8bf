package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ulikunitz/xz/lzma"
)

func init() { register("lzma", newLZMA) }

// lzmaCodec decodes numcodecs "lzma" (Python's lzma module) in each of its
// formats: 1 = .xz (xz.go), 2 = legacy .lzma ("alone"), 3 = raw LZMA1 or
// LZMA2 as described by the config's filters, 0 = .xz or .lzma by magic.
//
// The decoder's dictionary is never larger than the room left in dst (nor
// than the encoder's dictionary): a match cannot reach further back than
// the output written so far, so a 4 KiB chunk written with preset 9 costs a
// 4 KiB dictionary, not 64 MiB.
//
// Only LZMA1/LZMA2 filter chains decode; delta and branch (BCJ) filters
// are ErrConfig. Concatenated streams decode back to back, as Python's
// lzma.decompress reads them; other trailing bytes are ErrCorrupt (Python
// sometimes ignores them). An lzmaCodec value is safe for concurrent use.
type lzmaCodec struct {
	format int
	raw    lzmaRaw // format 3 only
}

var _ Decoder = (*lzmaCodec)(nil)

// Python's lzma.FORMAT_* values.
const (
	lzmaFormatAuto  = 0
	lzmaFormatXZ    = 1
	lzmaFormatAlone = 2
	lzmaFormatRaw   = 3
)

// liblzma filter ids, as they appear in a numcodecs config's "filters".
const (
	lzmaFilterLZMA1 = 0x4000000000000001
	lzmaFilterLZMA2 = 0x21
)

// lzmaRaw is the one filter of a raw (format 3) stream.
type lzmaRaw struct {
	lzma1   bool
	dictCap int  // the encoder's dictionary size
	props   byte // LZMA1 only: (pb*5+lp)*9+lc
}

func newLZMA(c Config) (Decoder, error) {
	format, err := c.Int("format", lzmaFormatXZ)
	if err != nil {
		return nil, err
	}
	if format < lzmaFormatAuto || format > lzmaFormatRaw {
		return nil, fmt.Errorf("%w: lzma format %d", ErrConfig, format)
	}
	d := &lzmaCodec{format: format}
	var filters []Config
	if c.Has("filters") {
		if err := json.Unmarshal(c["filters"], &filters); err != nil {
			return nil, fmt.Errorf("%w: lzma filters: %v", ErrConfig, err)
		}
	}
	for i, f := range filters {
		id, err := lzmaFilterID(f)
		if err != nil {
			return nil, err
		}
		if id != lzmaFilterLZMA1 && id != lzmaFilterLZMA2 {
			return nil, fmt.Errorf("%w: lzma filter %s is not supported (only LZMA1/LZMA2 chains decode)", ErrConfig, lzmaFilterName(id))
		}
		if i != len(filters)-1 {
			return nil, fmt.Errorf("%w: lzma filter %s must be last", ErrConfig, lzmaFilterName(id))
		}
	}
	if format != lzmaFormatRaw {
		// .xz and .lzma headers describe their own filters.
		return d, nil
	}
	if len(filters) != 1 {
		return nil, fmt.Errorf("%w: raw lzma needs exactly one LZMA1/LZMA2 filter, got %d", ErrConfig, len(filters))
	}
	if d.raw, err = lzmaRawFilter(filters[0]); err != nil {
		return nil, err
	}
	return d, nil
}

// lzmaFilterID reads a filter's "id". LZMA1's id (2^62+1) does not survive
// a float64, so the number is parsed from its JSON text.
func lzmaFilterID(f Config) (uint64, error) {
	raw, ok := f["id"]
	if !ok {
		return 0, fmt.Errorf("%w: lzma filter without id", ErrConfig)
	}
	id, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: lzma filter id %s", ErrConfig, raw)
	}
	return id, nil
}

func lzmaFilterName(id uint64) string {
	names := map[uint64]string{
		0x03: "delta", 0x04: "x86 BCJ", 0x05: "PowerPC BCJ", 0x06: "IA-64 BCJ",
		0x07: "ARM BCJ", 0x08: "ARM-Thumb BCJ", 0x09: "SPARC BCJ", 0x0A: "ARM64 BCJ",
		0x0B: "RISC-V BCJ", lzmaFilterLZMA2: "LZMA2", lzmaFilterLZMA1: "LZMA1",
	}
	if n, ok := names[id]; ok {
		return fmt.Sprintf("%d (%s)", id, n)
	}
	return fmt.Sprintf("%d", id)
}

// lzmaRawFilter reads an LZMA1/LZMA2 filter spec: "dict_size", else the
// dictionary of "preset" (default 6); "lc", "lp", "pb" for LZMA1.
func lzmaRawFilter(f Config) (lzmaRaw, error) {
	id, _ := lzmaFilterID(f)
	r := lzmaRaw{lzma1: id == lzmaFilterLZMA1}
	preset, err := f.Int("preset", 6)
	if err != nil {
		return r, err
	}
	level := preset & 0x1f // LZMA_PRESET_LEVEL_MASK; the rest is flags (extreme)
	if level > 9 || preset < 0 {
		return r, fmt.Errorf("%w: lzma preset %d", ErrConfig, preset)
	}
	// liblzma's lzma_lzma_preset: dictionary 2^dictPow2[level] bytes.
	dictPow2 := [...]uint{18, 20, 21, 22, 22, 23, 23, 24, 25, 26}
	if r.dictCap, err = f.Int("dict_size", 1<<dictPow2[level]); err != nil {
		return r, err
	}
	if r.dictCap < lzma.MinDictCap {
		r.dictCap = lzma.MinDictCap // liblzma's minimum is 4 KiB too
	}
	if int64(r.dictCap) > lzma.MaxDictCap {
		return r, fmt.Errorf("%w: lzma dict_size %d", ErrConfig, r.dictCap)
	}
	if r.lzma1 {
		lc, err1 := f.Int("lc", 3)
		lp, err2 := f.Int("lp", 0)
		pb, err3 := f.Int("pb", 2)
		if err := errors.Join(err1, err2, err3); err != nil {
			return r, err
		}
		if lc < 0 || lc > 8 || lp < 0 || lp > 4 || pb < 0 || pb > 4 {
			return r, fmt.Errorf("%w: lzma lc=%d lp=%d pb=%d", ErrConfig, lc, lp, pb)
		}
		r.props = byte((pb*5+lp)*9 + lc)
	}
	return r, nil
}

// Decode appends the decoded streams in src to dst without growing it.
func (d *lzmaCodec) Decode(dst, src []byte) ([]byte, error) {
	format := d.format
	if format == lzmaFormatAuto {
		format = lzmaFormatAlone
		if bytes.HasPrefix(src, xzMagic) {
			format = lzmaFormatXZ
		}
	}
	if format == lzmaFormatXZ {
		return xzDecode(dst, src)
	}
	out := dst
	for first := true; first || len(src) > 0; first = false {
		var err error
		if format == lzmaFormatAlone {
			out, src, err = lzmaAloneStream(out, src)
		} else {
			out, src, err = d.raw.stream(out, src)
		}
		if err != nil {
			return dst, err
		}
	}
	return out, nil
}

// lzmaDictCap bounds a decoder's dictionary by the encoder's and by the
// output still to come.
func lzmaDictCap(encoder int64, room int) int {
	n := min(encoder, int64(room))
	return int(max(n, lzma.MinDictCap))
}

// lzmaAloneStream decodes one .lzma stream: a 13-byte header (properties,
// dictionary size, uncompressed size or -1) and LZMA1 data. It returns the
// bytes after the stream.
func lzmaAloneStream(out, src []byte) ([]byte, []byte, error) {
	if len(src) < lzma.HeaderLen {
		return out, src, fmt.Errorf("%w: lzma header truncated", ErrCorrupt)
	}
	var h [lzma.HeaderLen]byte
	copy(h[:], src)
	dict := int64(binary.LittleEndian.Uint32(h[1:]))
	if size := int64(binary.LittleEndian.Uint64(h[5:])); size >= 0 && size > int64(cap(out)-len(out)) {
		return out, src, ErrTooLarge
	}
	binary.LittleEndian.PutUint32(h[1:], uint32(lzmaDictCap(dict, cap(out)-len(out))))
	return lzma1Stream(out, src, h[:], lzma.HeaderLen)
}

// stream decodes one raw stream of the configured filter.
func (r lzmaRaw) stream(out, src []byte) ([]byte, []byte, error) {
	room := cap(out) - len(out)
	if r.lzma1 {
		// Give the LZMA1 reader the header liblzma's raw decoder implies:
		// the filter's properties and an unknown size (so an end marker).
		var h [lzma.HeaderLen]byte
		h[0] = r.props
		binary.LittleEndian.PutUint32(h[1:], uint32(lzmaDictCap(int64(r.dictCap), room)))
		binary.LittleEndian.PutUint64(h[5:], ^uint64(0))
		return lzma1Stream(out, src, h[:], 0)
	}
	return lzma2Stream(out, src, lzmaDictCap(int64(r.dictCap), room))
}

// lzma1Stream decodes LZMA1 data src[skip:] under header h.
func lzma1Stream(out, src, h []byte, skip int) ([]byte, []byte, error) {
	body := bytes.NewReader(src[skip:])
	in := &lzmaPrefixReader{head: h, rest: body}
	r, err := lzma.ReaderConfig{DictCap: lzma.MaxDictCap}.NewReader(in)
	if err != nil {
		return out, src, libraryErr(err)
	}
	res, err := readAllCapped(out, r)
	if err != nil {
		return out, src, err
	}
	return res, src[len(src)-body.Len():], nil
}

// lzma2Stream decodes LZMA2 chunks up to and including the end marker. It
// reads as lzma1Stream does: the library's LZMA1 and LZMA2 readers are
// configured by different types with no interface in common.
func lzma2Stream(out, src []byte, dictCap int) ([]byte, []byte, error) {
	body := bytes.NewReader(src)
	r, err := lzma.Reader2Config{DictCap: dictCap}.NewReader2(body)
	if err != nil {
		return out, src, libraryErr(err)
	}
	res, err := readAllCapped(out, r)
	if err != nil {
		return out, src, err
	}
	return res, src[len(src)-body.Len():], nil
}

// lzmaPrefixReader reads head, then rest. It is the io.ByteReader the
// LZMA1 reader wants, and it patches the header without copying src.
type lzmaPrefixReader struct {
	head []byte
	rest *bytes.Reader
}

func (p *lzmaPrefixReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.rest.Read(b)
}

func (p *lzmaPrefixReader) ReadByte() (byte, error) {
	if len(p.head) > 0 {
		c := p.head[0]
		p.head = p.head[1:]
		return c, nil
	}
	return p.rest.ReadByte()
}
