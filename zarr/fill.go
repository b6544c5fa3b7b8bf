package zarr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zfuse/zfuse/codec"
)

// fillV2 parses a v2 fill_value into one element (nil for null, and for
// values zfuse cannot read, which it then treats as "no fill value":
// every chunk is written, none is assumed).
func (dt dataType) fillV2(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil // absent: fill requires it, v2 readers do not
	}
	b, err := dt.fill(raw) // S and V: base64, as zarr-python 2 writes them
	if err != nil {
		return nil
	}
	return b
}

// fill encodes fill_value as one element in dt's byte order. A JSON
// null gives nil (no fill value). Values that do not fit the type give
// ErrInvalid.
func (dt dataType) fill(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: fill_value is required", ErrInvalid)
	}
	if string(raw) == "null" || dt.Kind == 0 || dt.Kind == 'O' {
		return nil, nil
	}
	bad := func(why string) ([]byte, error) {
		return nil, fmt.Errorf("%w: fill_value %s for data type %s: %s", ErrInvalid, raw, dt.text, why)
	}
	b := make([]byte, dt.Size)
	why := ""
	switch dt.Kind {
	case 'b':
		why = putBool(b, raw)
	case 'i', 'u', 'M', 'm':
		v, err := parseInt(raw, dt)
		if err != nil {
			return bad(err.Error())
		}
		dt.PutUint(b, v)
	case 'f':
		if err := putFloat(b, raw, dt.Size, dt.Big); err != nil {
			return bad(err.Error())
		}
	case 'c':
		why = putComplex(b, raw, dt)
	case 'V', 'S':
		why = putOpaque(b, raw, dt)
	case 'U':
		why = putUnicode(b, raw, dt)
	}
	if why != "" {
		return bad(why)
	}
	return b, nil
}

// putBool writes a bool fill value (true, false, 0 or 1) into b, or says
// why it cannot.
func putBool(b []byte, raw json.RawMessage) (why string) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "not JSON"
	}
	switch v := v.(type) {
	case bool:
		if v {
			b[0] = 1
		}
	case float64:
		if v != 0 && v != 1 {
			return "not a bool"
		}
		b[0] = byte(v)
	default:
		return "not a bool"
	}
	return ""
}

// putComplex writes a complex fill value, [real, imag], into b, or says
// why it cannot.
func putComplex(b []byte, raw json.RawMessage, dt dataType) (why string) {
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil || len(parts) != 2 {
		return "want [real, imag]"
	}
	h := dt.Size / 2
	for i, p := range parts {
		if err := putFloat(b[i*h:(i+1)*h], p, h, dt.Big); err != nil {
			return err.Error()
		}
	}
	return ""
}

// putOpaque writes a fill value of raw bytes (V) or a byte string (S),
// a list of bytes or base64, into b, or says why it cannot.
func putOpaque(b []byte, raw json.RawMessage, dt dataType) (why string) {
	var ints []int
	var s string
	switch {
	case json.Unmarshal(raw, &ints) == nil:
		if len(ints) > dt.Size || (dt.Kind == 'V' && len(ints) != dt.Size) {
			return "wrong length"
		}
		for i, v := range ints {
			if v < 0 || v > 255 {
				return "byte out of range"
			}
			b[i] = byte(v)
		}
	case json.Unmarshal(raw, &s) == nil:
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(d) > dt.Size {
			return "not base64 of at most the item size"
		}
		copy(b, d)
	default:
		return "want a list of bytes or base64"
	}
	return ""
}

// putUnicode writes a string fill value as UTF-32 into b, or says why it
// cannot.
func putUnicode(b []byte, raw json.RawMessage, dt dataType) (why string) {
	var s string
	if json.Unmarshal(raw, &s) != nil || !utf8.ValidString(s) {
		return "want a string"
	}
	i := 0
	for _, r := range s {
		if i+4 > len(b) {
			return "too long"
		}
		utf32(dt.Big).PutUint(b[i:], uint64(r))
		i += 4
	}
	return ""
}

// parseInt reads an integer fill value (datetimes also take "NaT") and
// checks that it fits dt. It returns the two's complement bits.
func parseInt(raw json.RawMessage, dt dataType) (uint64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if (dt.Kind == 'M' || dt.Kind == 'm') && s == "NaT" {
			return 1 << 63, nil
		}
		return 0, fmt.Errorf("not an integer")
	}
	var num json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&num) != nil {
		return 0, fmt.Errorf("not a number")
	}
	text := num.String()
	bits := uint(8 * dt.Size)
	if dt.Kind == 'u' {
		v, err := strconv.ParseUint(text, 10, int(bits))
		if err != nil {
			f, ferr := strconv.ParseFloat(text, 64)
			if ferr != nil || f != math.Trunc(f) || f < 0 || f >= math.Ldexp(1, int(bits)) {
				return 0, fmt.Errorf("out of range")
			}
			v = uint64(f)
		}
		return v, nil
	}
	v, err := strconv.ParseInt(text, 10, int(bits))
	if err != nil {
		f, ferr := strconv.ParseFloat(text, 64)
		lim := math.Ldexp(1, int(bits)-1)
		if ferr != nil || f != math.Trunc(f) || f < -lim || f >= lim {
			return 0, fmt.Errorf("out of range")
		}
		v = int64(f)
	}
	return uint64(v), nil
}

// putFloat encodes one float fill value of size bytes: a number, "NaN",
// "Infinity", "-Infinity", or "0x…", the raw bits in hex.
func putFloat(b []byte, raw json.RawMessage, size int, big bool) error {
	t := floatType(size, big)
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("not a number")
		}
		t.PutFloat(b, f)
		return nil
	}
	switch s {
	case "NaN":
		t.PutUint(b, map[int]uint64{2: 0x7e00, 4: 0x7fc00000, 8: 0x7ff8000000000000}[size])
	case "Infinity":
		t.PutFloat(b, math.Inf(1))
	case "-Infinity":
		t.PutFloat(b, math.Inf(-1))
	default:
		h, ok := strings.CutPrefix(s, "0x")
		if !ok {
			return fmt.Errorf("unknown float string")
		}
		v, err := strconv.ParseUint(h, 16, 8*size)
		if err != nil {
			return fmt.Errorf("bad hex bits")
		}
		t.PutUint(b, v)
	}
	return nil
}

// v2Fill returns fill_value as zarr-python 2 encodes it for the presented
// typestr: floats as numbers or "NaN"/"Infinity"/"-Infinity" (a v3 raw-bits
// hex value becomes its float), V and S as base64, U as text, datetimes as
// int64, null as null.
func (dt dataType) v2Fill(raw json.RawMessage, fill []byte) json.RawMessage {
	if fill == nil {
		return json.RawMessage("null")
	}
	var v any
	switch dt.Kind {
	case 'b':
		v = fill[0] != 0
	case 'i', 'M', 'm':
		v = dt.Int(fill)
	case 'u':
		v = dt.Uint(fill)
	case 'f':
		return v2Float(raw, fill, dt.Size, dt.Big)
	case 'c':
		var parts []json.RawMessage
		json.Unmarshal(raw, &parts)
		parts = append(parts, nil, nil)
		h := dt.Size / 2
		re, im := v2Float(parts[0], fill[:h], h, dt.Big), v2Float(parts[1], fill[h:], h, dt.Big)
		return json.RawMessage("[" + string(re) + ", " + string(im) + "]")
	case 'V', 'S':
		v = base64.StdEncoding.EncodeToString(fill)
	case 'U':
		var rs []rune
		for i := 0; i+4 <= len(fill); i += 4 {
			rs = append(rs, rune(utf32(dt.Big).Uint(fill[i:])))
		}
		for len(rs) > 0 && rs[len(rs)-1] == 0 {
			rs = rs[:len(rs)-1]
		}
		v = string(rs)
	default:
		return json.RawMessage("null")
	}
	b, _ := jsonCompact(v)
	return b
}

// v2Float keeps a JSON number as written and turns the other encodings
// into the value the bits hold.
func v2Float(raw json.RawMessage, b []byte, size int, big bool) json.RawMessage {
	var f float64
	if raw != nil && json.Unmarshal(raw, &f) == nil {
		var buf bytes.Buffer
		json.Compact(&buf, raw)
		return buf.Bytes()
	}
	f = floatType(size, big).Float(b)
	switch {
	case math.IsNaN(f):
		return json.RawMessage(`"NaN"`)
	case math.IsInf(f, 1):
		return json.RawMessage(`"Infinity"`)
	case math.IsInf(f, -1):
		return json.RawMessage(`"-Infinity"`)
	}
	bits := 64
	if size == 4 {
		bits = 32
	}
	return json.RawMessage(strconv.FormatFloat(f, 'g', -1, bits))
}

// v3Fill is the v3 fill_value of one element: numbers as v2 wrote them
// (or as their value), bools, [re, im], lists of byte values for raw
// bytes, base64 for null-terminated bytes, text for UTF-32.
func (dt dataType) v3Fill(raw json.RawMessage, fill []byte) json.RawMessage {
	switch dt.Kind {
	case 'V':
		ints := make([]int, len(fill))
		for i, b := range fill {
			ints[i] = int(b)
		}
		b, _ := jsonCompact(ints)
		return b
	case 'M', 'm':
		b, _ := jsonCompact(dt.Int(fill))
		return b
	}
	return dt.v2Fill(raw, fill)
}

// floatType is the codec.DType of one float of size bytes.
func floatType(size int, big bool) codec.DType { return codec.DType{Kind: 'f', Size: size, Big: big} }

// utf32 is the codec.DType of one UTF-32 code unit.
func utf32(big bool) codec.DType { return codec.DType{Kind: 'u', Size: 4, Big: big} }
