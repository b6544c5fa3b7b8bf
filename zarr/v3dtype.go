package zarr

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zfuse/zfuse/codec"
)

// A dataType is a v3 data_type reduced to what decoding and the v2 view
// need: a numpy kind and item size.
type dataType struct {
	name string // "int16", "r24", "numpy.datetime64"
	text string // data_type as written: the bare name, or compact JSON
	kind byte   // numpy kind: b i u f c V S U M m; 0 when not a fixed-size type zfuse knows
	size int    // bytes per element
	unit string // kinds M and m: numpy unit with multiplier, "ms" or "10ms"
	// notRaw, when kind is 0, says why the type cannot be presented raw;
	// it wraps codec.ErrNotRaw.
	notRaw error
}

// coreTypes are the data types of the v3 core specification, except r<bits>.
var coreTypes = map[string]struct {
	kind byte
	size int
}{
	"bool": {'b', 1}, "int8": {'i', 1}, "int16": {'i', 2}, "int32": {'i', 4}, "int64": {'i', 8},
	"uint8": {'u', 1}, "uint16": {'u', 2}, "uint32": {'u', 4}, "uint64": {'u', 8},
	"float16": {'f', 2}, "float32": {'f', 4}, "float64": {'f', 8},
	"complex64": {'c', 8}, "complex128": {'c', 16},
}

// parseDataType parses data_type. Malformed values give ErrInvalid; types
// zfuse cannot present raw (variable-length strings and bytes, unknown
// extensions) parse with kind 0 and notRaw set.
func parseDataType(raw json.RawMessage) (dataType, error) {
	ext, err := parseExtension(raw)
	if err != nil {
		return dataType{}, fmt.Errorf("data_type: %w", err)
	}
	dt := dataType{name: ext.Name, text: ext.Name}
	if ext.Config != nil || bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			dt.text = buf.String()
		}
	}
	if t, ok := coreTypes[ext.Name]; ok {
		dt.kind, dt.size = t.kind, t.size
		return dt, nil
	}
	if bits, ok := strings.CutPrefix(ext.Name, "r"); ok && bits != "" {
		n, err := strconv.Atoi(bits)
		if err != nil || n <= 0 || n%8 != 0 || n > 8<<20 || bits != strconv.Itoa(n) {
			return dataType{}, fmt.Errorf("%w: data_type %q", ErrInvalid, ext.Name)
		}
		dt.kind, dt.size = 'V', n/8
		return dt, nil
	}
	c := codec.Config{}
	if ext.Config != nil {
		if err := json.Unmarshal(ext.Config, &c); err != nil {
			return dataType{}, fmt.Errorf("%w: data_type configuration: %v", ErrInvalid, err)
		}
	}
	invalid := func(err error) (dataType, error) {
		return dataType{}, fmt.Errorf("%w: data_type %s: %v", ErrInvalid, dt.text, err)
	}
	switch ext.Name {
	case "numpy.datetime64", "numpy.timedelta64":
		unit, err := c.String("unit", "")
		if err != nil {
			return invalid(err)
		}
		scale, err := c.Int("scale_factor", 1)
		if err != nil {
			return invalid(err)
		}
		if scale < 1 || scale > math.MaxInt32 {
			return invalid(fmt.Errorf("scale_factor %d", scale))
		}
		if scale != 1 {
			unit = strconv.Itoa(scale) + unit
		}
		if !validUnit("[" + unit + "]") {
			return invalid(fmt.Errorf("unit %q", unit))
		}
		dt.kind, dt.size, dt.unit = 'M', 8, unit
		if ext.Name == "numpy.timedelta64" {
			dt.kind = 'm'
		}
		return dt, nil
	case "fixed_length_utf32", "null_terminated_bytes", "raw_bytes":
		n, err := c.Int("length_bytes", -1)
		if err != nil {
			return invalid(err)
		}
		if n <= 0 || n > 1<<30 || (ext.Name == "fixed_length_utf32" && n%4 != 0) {
			return invalid(fmt.Errorf("length_bytes %d", n))
		}
		dt.kind, dt.size = map[string]byte{"fixed_length_utf32": 'U', "null_terminated_bytes": 'S', "raw_bytes": 'V'}[ext.Name], n
		return dt, nil
	case "string", "variable_length_bytes", "bytes", "variable_length_utf8":
		dt.notRaw = fmt.Errorf("%w: variable-length data type %s", codec.ErrNotRaw, dt.text)
		return dt, nil
	}
	dt.notRaw = fmt.Errorf("%w: data type %s is not supported", codec.ErrNotRaw, dt.text)
	return dt, nil
}

// typestr returns the numpy typestr of dt in the given byte order, or ""
// when numpy has no fixed-size equivalent.
func (dt dataType) typestr(big bool) string {
	order := "<"
	if big {
		order = ">"
	}
	switch dt.kind {
	case 'b', 'V', 'S':
		return fmt.Sprintf("|%c%d", dt.kind, dt.size)
	case 'i', 'u', 'f', 'c':
		if dt.size == 1 {
			order = "|"
		}
		return fmt.Sprintf("%s%c%d", order, dt.kind, dt.size)
	case 'U':
		return fmt.Sprintf("%sU%d", order, dt.size/4)
	case 'M', 'm':
		return fmt.Sprintf("%s%c8[%s]", order, dt.kind, dt.unit)
	}
	return ""
}

// ordered reports whether the bytes of an element depend on the byte order.
func (dt dataType) ordered() bool {
	switch dt.kind {
	case 'i', 'u', 'f', 'c', 'U', 'M', 'm':
		return dt.size > 1
	}
	return false
}

func (dt dataType) order(big bool) binary.ByteOrder {
	if big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// floatType is the codec.DType of one float of size bytes.
func floatType(size int, big bool) codec.DType { return codec.DType{Kind: 'f', Size: size, Big: big} }

// fill encodes fill_value as one element in the given byte order. A JSON
// null gives nil (no fill value). Values that do not fit the type give
// ErrInvalid.
func (dt dataType) fill(raw json.RawMessage, big bool) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: fill_value is required", ErrInvalid)
	}
	if string(raw) == "null" || dt.kind == 0 {
		return nil, nil
	}
	bad := func(why string) ([]byte, error) {
		return nil, fmt.Errorf("%w: fill_value %s for data type %s: %s", ErrInvalid, raw, dt.text, why)
	}
	b := make([]byte, dt.size)
	switch dt.kind {
	case 'b':
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return bad("not JSON")
		}
		switch v := v.(type) {
		case bool:
			if v {
				b[0] = 1
			}
		case float64:
			if v != 0 && v != 1 {
				return bad("not a bool")
			}
			b[0] = byte(v)
		default:
			return bad("not a bool")
		}
	case 'i', 'u', 'M', 'm':
		v, err := parseInt(raw, dt)
		if err != nil {
			return bad(err.Error())
		}
		codec.DType{Kind: 'u', Size: dt.size, Big: big}.PutUint(b, v)
	case 'f':
		if err := putFloat(b, raw, dt.size, big); err != nil {
			return bad(err.Error())
		}
	case 'c':
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) != nil || len(parts) != 2 {
			return bad("want [real, imag]")
		}
		h := dt.size / 2
		for i, p := range parts {
			if err := putFloat(b[i*h:(i+1)*h], p, h, big); err != nil {
				return bad(err.Error())
			}
		}
	case 'V', 'S':
		var ints []int
		var s string
		switch {
		case json.Unmarshal(raw, &ints) == nil:
			if len(ints) > dt.size || (dt.kind == 'V' && len(ints) != dt.size) {
				return bad("wrong length")
			}
			for i, v := range ints {
				if v < 0 || v > 255 {
					return bad("byte out of range")
				}
				b[i] = byte(v)
			}
		case json.Unmarshal(raw, &s) == nil:
			d, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(d) > dt.size {
				return bad("not base64 of at most the item size")
			}
			copy(b, d)
		default:
			return bad("want a list of bytes or base64")
		}
	case 'U':
		var s string
		if json.Unmarshal(raw, &s) != nil || !utf8.ValidString(s) {
			return bad("want a string")
		}
		i := 0
		for _, r := range s {
			if i+4 > len(b) {
				return bad("too long")
			}
			dt.order(big).PutUint32(b[i:], uint32(r))
			i += 4
		}
	}
	return b, nil
}

// parseInt reads an integer fill value (datetimes also take "NaT") and
// checks that it fits dt. It returns the two's complement bits.
func parseInt(raw json.RawMessage, dt dataType) (uint64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if (dt.kind == 'M' || dt.kind == 'm') && s == "NaT" {
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
	bits := uint(8 * dt.size)
	if dt.kind == 'u' {
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
func (dt dataType) v2Fill(raw json.RawMessage, fill []byte, big bool) json.RawMessage {
	if fill == nil {
		return json.RawMessage("null")
	}
	var v any
	switch dt.kind {
	case 'b':
		v = fill[0] != 0
	case 'i', 'M', 'm':
		v = codec.DType{Kind: 'i', Size: dt.size, Big: big}.Int(fill)
	case 'u':
		v = codec.DType{Kind: 'u', Size: dt.size, Big: big}.Uint(fill)
	case 'f':
		return v2Float(raw, fill, dt.size, big)
	case 'c':
		var parts []json.RawMessage
		json.Unmarshal(raw, &parts)
		parts = append(parts, nil, nil)
		h := dt.size / 2
		re, im := v2Float(parts[0], fill[:h], h, big), v2Float(parts[1], fill[h:], h, big)
		return json.RawMessage("[" + string(re) + ", " + string(im) + "]")
	case 'V', 'S':
		v = base64.StdEncoding.EncodeToString(fill)
	case 'U':
		var rs []rune
		for i := 0; i+4 <= len(fill); i += 4 {
			rs = append(rs, rune(dt.order(big).Uint32(fill[i:])))
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
