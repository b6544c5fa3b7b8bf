package netcdf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Attributes from JSON: Zarr keeps attributes as a JSON object, netCDF as
// typed values. A string becomes text (Char); a number or a list of
// numbers becomes Int when every value is an integer that fits 32 bits,
// else (CDF-5) Int64 or UInt64 when they fit 64, else Double (integers up
// to 2^53 in magnitude exactly; beyond, the list is kept as JSON text); a
// bool or a list of bools becomes Byte 0/1; anything else (null, objects,
// empty lists, lists of strings or of mixed kinds) becomes its JSON text.
// The bare NaN, Infinity and -Infinity that Python's json module writes
// are numbers.

// A JSONAttr is one member of a JSON object: a name and its value, raw.
type JSONAttr struct {
	Name  string
	Value []byte
}

// ErrJSON means a document is not the JSON (with NaN and Infinity) of an
// object.
var ErrJSON = errors.New("netcdf: not a JSON object")

// JSONObject returns the members of the JSON object doc in document
// order; a name given twice keeps its first place and its last value, as
// Python's json module reads it.
func JSONObject(doc []byte) ([]JSONAttr, error) {
	p := &parser{b: doc}
	v, err := p.document()
	if err != nil {
		return nil, err
	}
	if v.kind != jsonObject {
		return nil, fmt.Errorf("%w: a JSON %s", ErrJSON, v.kind)
	}
	var out []JSONAttr
	at := map[string]int{}
	for i, k := range v.keys {
		m := JSONAttr{Name: k, Value: v.items[i].raw}
		if j, ok := at[k]; ok {
			out[j] = m
			continue
		}
		at[k] = len(out)
		out = append(out, m)
	}
	return out, nil
}

// FromJSON returns the attribute name whose value is the JSON value v, in
// a file of format f, as the package comment says.
func FromJSON(name string, v []byte, f Format) (Attr, error) {
	p := &parser{b: v}
	val, err := p.document()
	if err != nil {
		return Attr{}, err
	}
	items := []*value{val}
	if val.kind == jsonArray {
		items = val.items
	}
	switch {
	case val.kind == jsonString:
		return Text(name, val.s), nil
	case len(items) == 0:
	case every(items, jsonBool):
		b := make([]byte, len(items))
		for i, it := range items {
			if it.s == "true" {
				b[i] = 1
			}
		}
		return Attr{Name: name, Type: Byte, Values: b}, nil
	case every(items, jsonNumber):
		if a, ok := integers(name, items, f); ok {
			return a, nil
		}
		if integersExact(items) {
			a, _ := asType(name, items, Double)
			return a, nil
		}
	}
	return Text(name, val.text()), nil
}

// AsType returns the attribute name whose value is the JSON number or
// list of numbers v as values of type t, where t holds each of them
// exactly (Float: NaN and the infinities too; a value that rounds does
// not fit); ok is false otherwise.
func AsType(name string, v []byte, t Type) (a Attr, ok bool) {
	p := &parser{b: v}
	val, err := p.document()
	if err != nil || t == Char || !t.Valid() {
		return Attr{}, false
	}
	items := []*value{val}
	if val.kind == jsonArray {
		items = val.items
	}
	if len(items) == 0 || !every(items, jsonNumber) {
		return Attr{}, false
	}
	return asType(name, items, t)
}

// Text returns the attribute name holding the text s. An empty text is
// one NUL, as netCDF-C's ncgen and netCDF4-python write "" (a reader
// returns "" for it).
func Text(name, s string) Attr {
	if s == "" {
		return Attr{Name: name, Type: Char, Values: []byte{0}}
	}
	return Attr{Name: name, Type: Char, Values: []byte(s)}
}

// every reports whether every item is of kind k.
func every(items []*value, k jsonKind) bool {
	for _, it := range items {
		if it.kind != k {
			return false
		}
	}
	return true
}

// integers returns items, numbers, as the narrowest integer type of f that
// holds them all: Int, or in CDF-5 Int64 or UInt64. ok is false when one is
// not an integer or none fits.
func integers(name string, items []*value, f Format) (Attr, bool) {
	if !allIntegers(items) {
		return Attr{}, false
	}
	for _, t := range []Type{Int, Int64, UInt64} {
		if t.In(f) {
			if a, ok := asType(name, items, t); ok {
				return a, true
			}
		}
	}
	return Attr{}, false
}

func allIntegers(items []*value) bool {
	for _, it := range items {
		if !it.integer() {
			return false
		}
	}
	return true
}

// integersExact reports whether a double holds every number written as an
// integer exactly.
func integersExact(items []*value) bool {
	for _, it := range items {
		if !it.integer() {
			continue
		}
		f, _ := it.float()
		if i, ok := it.int(); ok && f < 1<<63 && int64(f) == i {
			continue
		}
		if u, ok := it.uint(); ok && f < 1<<64 && uint64(f) == u {
			continue
		}
		return false
	}
	return true
}

// asType encodes numbers as values of t, if t holds each exactly.
func asType(name string, items []*value, t Type) (Attr, bool) {
	size := t.Size()
	b := make([]byte, len(items)*size)
	for i, it := range items {
		if !put(b[i*size:(i+1)*size], t, it) {
			return Attr{}, false
		}
	}
	return Attr{Name: name, Type: t, Values: b}, true
}

// put writes the number it into b as one value of t, if t holds it
// exactly.
func put(b []byte, t Type, it *value) bool {
	switch t {
	case Float, Double:
		f, ok := it.float()
		if !ok {
			return false
		}
		if t == Double {
			binary.BigEndian.PutUint64(b, math.Float64bits(f))
			return true
		}
		if float64(float32(f)) != f && !math.IsNaN(f) {
			return false
		}
		binary.BigEndian.PutUint32(b, math.Float32bits(float32(f)))
		return true
	case UByte, UShort, UInt, UInt64:
		u, ok := it.uint()
		if !ok || (t != UInt64 && u >= 1<<(8*t.Size())) {
			return false
		}
		putBits(b, u)
		return true
	}
	i, ok := it.int()
	lim := int64(1) << (8*t.Size() - 1)
	if !ok || (t != Int64 && (i < -lim || i >= lim)) {
		return false
	}
	putBits(b, uint64(i))
	return true
}

// putBits writes the low len(b) bytes of v into b, big-endian.
func putBits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// A JSON value, as parser reads it.
type value struct {
	kind  jsonKind
	s     string   // a string's text; a number's or literal's token
	items []*value // array elements, object values
	keys  []string // object keys, one per item
	raw   []byte   // the value's bytes in the document
}

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

func (k jsonKind) String() string {
	return [...]string{"null", "bool", "number", "string", "array", "object"}[k]
}

// integer reports whether a number is written as an integer.
func (v *value) integer() bool {
	return v.kind == jsonNumber && !strings.ContainsAny(v.s, ".eEIN")
}

// float returns a number's value; NaN and the infinities too.
func (v *value) float() (float64, bool) {
	switch v.s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// int returns an integral number as an int64.
func (v *value) int() (int64, bool) {
	if v.integer() {
		i, err := strconv.ParseInt(v.s, 10, 64)
		return i, err == nil
	}
	f, ok := v.float()
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// uint returns a non-negative integral number as a uint64.
func (v *value) uint() (uint64, bool) {
	if v.integer() {
		u, err := strconv.ParseUint(v.s, 10, 64)
		return u, err == nil
	}
	f, ok := v.float()
	if !ok || f != math.Trunc(f) || f < 0 || f >= 1<<64 {
		return 0, false
	}
	return uint64(f), true
}

// text writes v as compact JSON (NaN and the infinities bare, as Python
// writes them).
func (v *value) text() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v *value) write(b *strings.Builder) {
	switch v.kind {
	case jsonString:
		q, _ := json.Marshal(v.s)
		b.Write(q)
	case jsonArray, jsonObject:
		open, close := byte('['), byte(']')
		if v.kind == jsonObject {
			open, close = '{', '}'
		}
		b.WriteByte(open)
		for i, it := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.kind == jsonObject {
				q, _ := json.Marshal(v.keys[i])
				b.Write(q)
				b.WriteByte(':')
			}
			it.write(b)
		}
		b.WriteByte(close)
	default:
		b.WriteString(v.s)
	}
}

// A parser reads one JSON document, accepting NaN, Infinity and
// -Infinity as numbers. Nesting is bounded by maxDepth.
type parser struct {
	b     []byte
	i     int
	depth int
}

const maxDepth = 1000

func (p *parser) document() (*value, error) {
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.b) {
		return nil, p.fail("text after the value")
	}
	return v, nil
}

func (p *parser) fail(why string) error {
	return fmt.Errorf("%w: offset %d: %s", ErrJSON, p.i, why)
}

func (p *parser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value() (*value, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, p.fail("unexpected end")
	}
	start := p.i
	v := &value{}
	var err error
	switch c := p.b[p.i]; {
	case c == '{' || c == '[':
		if p.depth++; p.depth > maxDepth {
			return nil, p.fail("nested too deeply")
		}
		err = p.container(v, c)
		p.depth--
	case c == '"':
		v.kind = jsonString
		v.s, err = p.str()
	case c == '-' || c == 'I' || c == 'N' || c >= '0' && c <= '9':
		v.kind = jsonNumber
		v.s, err = p.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(p.b[p.i:min(p.i+5, len(p.b))]), lit) {
				p.i += len(lit)
				v.kind, v.s = jsonBool, lit
				if lit == "null" {
					v.kind = jsonNull
				}
				break
			}
		}
		if p.i == start {
			return nil, p.fail(fmt.Sprintf("unexpected %q", c))
		}
	}
	if err != nil {
		return nil, err
	}
	v.raw = p.b[start:p.i]
	return v, nil
}

// container reads an array or object, whose opening c is at p.i.
func (p *parser) container(v *value, c byte) error {
	v.kind, c = jsonArray, ']'
	if p.b[p.i] == '{' {
		v.kind, c = jsonObject, '}'
	}
	p.i++
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return nil
	}
	for {
		if v.kind == jsonObject {
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return p.fail("want a string key")
			}
			k, err := p.str()
			if err != nil {
				return err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return p.fail("want ':'")
			}
			p.i++
			v.keys = append(v.keys, k)
		}
		it, err := p.value()
		if err != nil {
			return err
		}
		v.items = append(v.items, it)
		p.space()
		switch {
		case p.i >= len(p.b):
			return p.fail("unexpected end")
		case p.b[p.i] == ',':
			p.i++
		case p.b[p.i] == c:
			p.i++
			return nil
		default:
			return p.fail("want ',' or " + string(c))
		}
	}
}

// str reads a string at p.i and returns its text.
func (p *parser) str() (string, error) {
	start := p.i
	p.i++
	escaped := false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			raw := p.b[start:p.i]
			if !escaped && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", p.fail("bad string: " + err.Error())
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", p.fail("control character in a string")
		default:
			p.i++
		}
	}
	return "", p.fail("unterminated string")
}

// number reads a number, or NaN, Infinity or -Infinity, at p.i.
func (p *parser) number() (string, error) {
	start := p.i
	for _, lit := range []string{"NaN", "Infinity", "-Infinity"} {
		if strings.HasPrefix(string(p.b[p.i:min(p.i+len(lit), len(p.b))]), lit) {
			p.i += len(lit)
			return lit, nil
		}
	}
	for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
		p.i++
	}
	s := string(p.b[start:p.i])
	if !json.Valid([]byte(s)) {
		return "", p.fail(fmt.Sprintf("bad number %q", s))
	}
	return s, nil
}
