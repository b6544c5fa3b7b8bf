package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/codec"
)

// A dataType is an array's element type: the codec.DType it maps onto,
// and how the metadata names it. Both formats map onto the one model,
// codec.ParseDType: a v2 dtype is a numpy typestr (or a structured descr,
// raw bytes here), a v3 data_type a name that this file translates.
type dataType struct {
	// Kind is 0 when the type is not a fixed-size type zfuse knows (notRaw
	// says why). Big is the byte order of the presented chunks: the
	// typestr's in v2, the bytes codec's in v3.
	codec.DType
	text       string // as written: the v2 typestr or descr (compact), the bare v3 name, or compact JSON
	structured bool   // a v2 structured dtype: Kind 'V' of the record size
	// notRaw, when set, says why the elements cannot be presented raw
	// (objects, variable-length or unknown types); it wraps codec.ErrNotRaw.
	notRaw error
}

// typestr returns the numpy typestr of dt, or "" when numpy has no
// fixed-size equivalent.
func (dt dataType) typestr() string {
	if dt.Kind == 0 || dt.structured {
		return ""
	}
	return dt.String()
}

// endian names the byte order of dt's elements as the v3 bytes codec
// does: "little", "big", or "" where it means nothing (1-byte items, raw
// bytes).
func (dt dataType) endian() string {
	switch {
	case !dt.Ordered():
		return ""
	case dt.Big:
		return "big"
	}
	return "little"
}

// sameElements reports whether two data types describe the same elements
// in the same byte order.
func (dt dataType) sameElements(o dataType) bool {
	return dt.Kind != 0 && dt.DType == o.DType && dt.structured == o.structured
}

// parseV2DType parses a v2 dtype: a numpy typestr ("<f8", "|S5", "<U3",
// "<M8[ns]") or a structured descr (a JSON list of [name, dtype] or
// [name, dtype, shape], nested), which zfuse presents as raw bytes of its
// record size. Object dtypes ("|O", or a record holding one) and zero-size
// ones parse with notRaw set.
func parseV2DType(raw json.RawMessage) (dataType, error) {
	var dt dataType
	var s string
	object := false
	if json.Unmarshal(raw, &s) == nil {
		d, err := v2Typestr(s)
		if err != nil {
			return dt, err
		}
		dt.DType, dt.text, object = d, s, d.Kind == 'O'
	} else {
		size, obj, err := descrSize(raw)
		if err != nil {
			return dt, err
		}
		dt.DType, dt.structured, object = codec.DType{Kind: 'V', Size: size}, true, obj
		var buf bytes.Buffer
		json.Compact(&buf, raw) // it parsed: valid JSON, whose strings keep their spaces
		dt.text = buf.String()
	}
	switch {
	case object:
		dt.notRaw = fmt.Errorf("%w: object dtype %s", codec.ErrNotRaw, dt.text)
	case dt.Size == 0:
		dt.notRaw = fmt.Errorf("%w: zero-size dtype %s", codec.ErrNotRaw, dt.text)
	}
	return dt, nil
}

// v2Typestr parses the typestr of a v2 dtype, which always begins with
// its byte order.
func v2Typestr(s string) (codec.DType, error) {
	if s == "" || !strings.ContainsRune("<>|=", rune(s[0])) {
		return codec.DType{}, fmt.Errorf("%w: unknown dtype %q", ErrInvalid, s)
	}
	d, err := codec.ParseDType(s)
	if err != nil {
		return codec.DType{}, fmt.Errorf("%w: unknown dtype %q", ErrInvalid, s)
	}
	return d, nil
}

// descrSize returns the record size of a structured descr, and whether
// any field holds objects.
func descrSize(raw json.RawMessage) (size int, object bool, err error) {
	var fields [][]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) == 0 {
		return 0, false, fmt.Errorf("%w: dtype %s is neither a typestr nor a structured descr", ErrInvalid, raw)
	}
	for _, f := range fields {
		if len(f) < 2 || len(f) > 3 {
			return 0, false, fmt.Errorf("%w: structured dtype field %s", ErrInvalid, raw)
		}
		var n int
		var s string
		if json.Unmarshal(f[1], &s) == nil {
			d, err := v2Typestr(s)
			if err != nil {
				return 0, false, err
			}
			n = d.Size
			object = object || d.Kind == 'O'
		} else {
			sub, obj, err := descrSize(f[1])
			if err != nil {
				return 0, false, err
			}
			n = sub
			object = object || obj
		}
		if len(f) == 3 {
			var shape []int
			if err := json.Unmarshal(f[2], &shape); err != nil {
				return 0, false, fmt.Errorf("%w: structured dtype field shape %s", ErrInvalid, f[2])
			}
			for _, d := range shape {
				if d < 0 || d > 1<<20 {
					return 0, false, fmt.Errorf("%w: structured dtype field shape %s", ErrInvalid, f[2])
				}
				n *= d
			}
		}
		size += n
		if size > 1<<30 {
			return 0, false, fmt.Errorf("%w: dtype %s too large", ErrInvalid, raw)
		}
	}
	return size, object, nil
}

// v3Core lists the data types of the v3 core specification other than
// r<bits>. Their names are numpy's, so codec.ParseDType reads them.
var v3Core = []string{
	"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float16", "float32", "float64", "complex64", "complex128",
}

// v3Bytes maps the v3 extension data types of fixed-length bytes and text
// (configured by "length_bytes") to their numpy kinds.
var v3Bytes = map[string]byte{"fixed_length_utf32": 'U', "null_terminated_bytes": 'S', "raw_bytes": 'V'}

// parseDataType parses a v3 data_type (its byte order, Big, is the bytes
// codec's, set by the caller). Malformed values give ErrInvalid; types
// zfuse cannot present raw (variable-length strings and bytes, unknown
// extensions) parse with Kind 0 and notRaw set.
func parseDataType(raw json.RawMessage) (dataType, error) {
	ext, err := parseExtension(raw)
	if err != nil {
		return dataType{}, fmt.Errorf("data_type: %w", err)
	}
	dt := dataType{text: ext.Name}
	if ext.Config != nil || bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			dt.text = buf.String()
		}
	}
	for _, name := range v3Core {
		if ext.Name == name {
			dt.DType, err = codec.ParseDType(name)
			return dt, err
		}
	}
	if bits, ok := strings.CutPrefix(ext.Name, "r"); ok && bits != "" {
		n, err := strconv.Atoi(bits)
		if err != nil || n <= 0 || n%8 != 0 || n > 8<<20 || bits != strconv.Itoa(n) {
			return dataType{}, fmt.Errorf("%w: data_type %q", ErrInvalid, ext.Name)
		}
		dt.DType = codec.DType{Kind: 'V', Size: n / 8}
		return dt, nil
	}
	c := codec.Config{}
	if ext.Config != nil {
		if err := json.Unmarshal(ext.Config, &c); err != nil {
			return dataType{}, fmt.Errorf("%w: data_type configuration: %v", ErrInvalid, err)
		}
	}
	switch ext.Name {
	case "numpy.datetime64", "numpy.timedelta64":
		return parseTimeType(dt, ext.Name, c)
	case "fixed_length_utf32", "null_terminated_bytes", "raw_bytes":
		return parseFixedBytes(dt, ext.Name, c)
	case "string", "variable_length_bytes", "bytes", "variable_length_utf8":
		dt.notRaw = fmt.Errorf("%w: variable-length data type %s", codec.ErrNotRaw, dt.text)
		return dt, nil
	}
	dt.notRaw = fmt.Errorf("%w: data type %s is not supported", codec.ErrNotRaw, dt.text)
	return dt, nil
}

// parseTimeType sets dt to the numpy.datetime64 or numpy.timedelta64 (name)
// of configuration c's unit and scale_factor.
func parseTimeType(dt dataType, name string, c codec.Config) (dataType, error) {
	unit, err := c.String("unit", "")
	if err != nil {
		return invalidType(dt, err)
	}
	scale, err := c.Int("scale_factor", 1)
	if err != nil {
		return invalidType(dt, err)
	}
	if scale != 1 {
		unit = strconv.Itoa(scale) + unit
	}
	kind := "<M8"
	if name == "numpy.timedelta64" {
		kind = "<m8"
	}
	if dt.DType, err = codec.ParseDType(kind + "[" + unit + "]"); err != nil {
		return invalidType(dt, fmt.Errorf("unit %q", unit))
	}
	return dt, nil
}

// parseFixedBytes sets dt to the fixed-length string or bytes type name of
// configuration c's length_bytes.
func parseFixedBytes(dt dataType, name string, c codec.Config) (dataType, error) {
	n, err := c.Int("length_bytes", -1)
	if err != nil {
		return invalidType(dt, err)
	}
	if n <= 0 || n > 1<<30 || (name == "fixed_length_utf32" && n%4 != 0) {
		return invalidType(dt, fmt.Errorf("length_bytes %d", n))
	}
	dt.DType = codec.DType{Kind: v3Bytes[name], Size: n}
	return dt, nil
}

// invalidType returns the ErrInvalid of dt's malformed configuration.
func invalidType(dt dataType, err error) (dataType, error) {
	return dataType{}, fmt.Errorf("%w: data_type %s: %v", ErrInvalid, dt.text, err)
}

// v3DataTypeName is the v3 data_type of dt: the core types,
// numpy.datetime64/timedelta64 (zarr-python 3's extension),
// null_terminated_bytes and fixed_length_utf32 for S and U, r<bits> for
// unstructured V. Structured dtypes have no v3 equivalent zfuse writes.
func v3DataTypeName(dt dataType) (json.RawMessage, error) {
	for _, name := range v3Core {
		if d, _ := codec.ParseDType(name); d.Kind == dt.Kind && d.Size == dt.Size {
			return jsonCompact(name)
		}
	}
	switch dt.Kind {
	case 'M', 'm':
		name := map[byte]string{'M': "numpy.datetime64", 'm': "numpy.timedelta64"}[dt.Kind]
		unit := strings.TrimLeft(dt.Unit, "0123456789")
		scale := 1
		if n := dt.Unit[:len(dt.Unit)-len(unit)]; n != "" {
			scale, _ = strconv.Atoi(n)
		}
		if unit == "" {
			unit = "generic"
		}
		return jsonCompact(map[string]any{"name": name, "configuration": map[string]any{"unit": unit, "scale_factor": scale}})
	case 'S':
		return jsonCompact(map[string]any{"name": "null_terminated_bytes", "configuration": map[string]any{"length_bytes": dt.Size}})
	case 'U':
		return jsonCompact(map[string]any{"name": "fixed_length_utf32", "configuration": map[string]any{"length_bytes": dt.Size}})
	case 'V':
		if !dt.structured {
			return jsonCompact(fmt.Sprintf("r%d", 8*dt.Size))
		}
	}
	return nil, fmt.Errorf("%w: dtype %s has no Zarr v3 data type (store it as v2)", codec.ErrNotRaw, dt.text)
}
