package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/zfuse/zfuse/codec"
)

// The .npy view presents an array as one NumPy .npy file: NpyHeader, then
// the flat layout (flat.go). The header is byte for byte what numpy 1.24's
// np.save writes for the same array: the magic "\x93NUMPY", the format
// version, the length of the header text, and the text, a Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': ..., } padded with
// spaces and a newline so that the data starts at a multiple of 64 bytes.

// npyAlign is where the data of a .npy file starts: a multiple of it
// (numpy's ARRAY_ALIGN).
const npyAlign = 64

// npyGrowth is the room numpy leaves in a header for the length of the
// growing axis to gain digits (GROWTH_AXIS_MAX_DIGITS).
const npyGrowth = 21

// NpyHeader returns the header of the array's .npy file: format 1.0, or
// 2.0 when the header text is longer than 64 KiB, or 3.0 when a structured
// dtype's field names are not Latin-1; 'descr' the dtype in the stored
// byte order (a list of fields for a structured v2 dtype); 'fortran_order'
// True for an array stored in order F (unless the array is also
// C-contiguous, as numpy says); 'shape'. Arrays passed through give their
// PassThrough error; arrays numpy cannot hold in one file (too large, a
// descr it cannot read) an error wrapping codec.ErrNotRaw.
func (a *Array) NpyHeader() ([]byte, error) {
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	if a.FlatLen() < 0 {
		return nil, fmt.Errorf("%w: shape %v of %d-byte items is too large for one file", codec.ErrNotRaw, a.Shape, a.ItemSize)
	}
	descr := pyStr(a.dt.String())
	if a.dt.structured {
		var err error
		if descr, err = pyDescr(json.RawMessage(a.dt.text)); err != nil {
			return nil, fmt.Errorf("%w: dtype %s: %v", codec.ErrNotRaw, a.dt.text, err)
		}
	}
	fortran := a.Order == "F" && !cContiguous(a.Shape)
	var h strings.Builder
	h.WriteString("{'descr': " + descr + ", 'fortran_order': ")
	h.WriteString(map[bool]string{false: "False", true: "True"}[fortran])
	h.WriteString(", 'shape': " + pyShape(a.Shape) + ", }")
	if n := len(a.Shape); n > 0 {
		grow := a.Shape[0]
		if fortran {
			grow = a.Shape[n-1]
		}
		h.WriteString(strings.Repeat(" ", max(npyGrowth-len(strconv.Itoa(grow)), 0)))
	}
	text, major := latin1(h.String())
	if major == 0 {
		text, major = []byte(h.String()), 3 // UTF-8
	}
	// The header's length field: 2 bytes in format 1.0, 4 in 2.0 and 3.0.
	size := func(lenSize int) (pad, hlen int) {
		pad = npyAlign - (6+2+lenSize+len(text)+1)%npyAlign
		return pad, len(text) + 1 + pad
	}
	pad, hlen := size(2)
	if major == 1 && hlen > 1<<16-1 {
		major = 2
	}
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	} else {
		pad, hlen = size(4)
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
	}
	b = append(b, text...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	return append(b, '\n'), nil
}

// cContiguous reports whether an array of this shape is laid out the same
// in C and F order: at most one axis longer than 1, or no element.
func cContiguous(shape []int) bool {
	long := 0
	for _, d := range shape {
		if d == 0 {
			return true
		}
		if d > 1 {
			long++
		}
	}
	return long <= 1
}

// latin1 encodes s as Latin-1 with major version 1 (numpy's encoding of
// format 1.0 and 2.0 headers), or reports 0 when s has a rune beyond it.
func latin1(s string) ([]byte, byte) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, 0
		}
		b = append(b, byte(r))
	}
	return b, 1
}

// pyShape writes a shape as a Python tuple: "()", "(3,)", "(3, 4)".
func pyShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return pyTuple(parts)
}

func pyTuple(parts []string) string {
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// pyStr writes s as Python's repr does: single quotes, unless s holds one
// and no double quote; backslash escapes for the quote, the backslash and
// characters that are not printable.
func pyStr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x7f && r >= 0x20, r > 0xa0 && unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// pyDescr writes a structured v2 dtype (a JSON list of [name, dtype] and
// [name, dtype, shape], dtype a typestr or a nested list) as numpy writes
// its descr: a Python list of tuples.
func pyDescr(raw json.RawMessage) (string, error) {
	var fields [][]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "", err
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		if len(f) < 2 || len(f) > 3 {
			return "", fmt.Errorf("field %d has %d members", i, len(f))
		}
		var name string
		if err := json.Unmarshal(f[0], &name); err != nil {
			return "", fmt.Errorf("field %d: the name is not a string", i)
		}
		var typ string
		if err := json.Unmarshal(f[1], &typ); err == nil {
			typ = pyStr(typ)
		} else if typ, err = pyDescr(f[1]); err != nil {
			return "", err
		}
		t := []string{pyStr(name), typ}
		if len(f) == 3 {
			var shape []int
			if err := json.Unmarshal(f[2], &shape); err != nil {
				return "", fmt.Errorf("field %d: shape %s", i, f[2])
			}
			t = append(t, pyShape(shape))
		}
		parts[i] = "(" + strings.Join(t, ", ") + ")"
	}
	return "[" + strings.Join(parts, ", ") + "]", nil
}

// NpyAttrs returns the NAME.json that the .npy view serves beside the
// array's .npy file: the array's attributes as one JSON object. For v3
// arrays they are the attributes with xarray's "_ARRAY_DIMENSIONS" added
// from dimension_names (as the .zattrs of --as-v2); for v2 they live in
// the .zattrs document beside the .zarray, which the caller passes (nil
// when there is none) and which is served as stored.
func (a *Array) NpyAttrs(zattrs []byte) ([]byte, error) {
	if a.Format == 3 {
		return v2Attrs(a.attrs, a.dimNames)
	}
	if zattrs == nil {
		return []byte("{}"), nil
	}
	return zattrs, nil
}
