package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// A Config is one numcodecs codec configuration: the JSON object stored in
// a v2 .zarray's "compressor" or "filters", e.g.
// {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}.
type Config map[string]json.RawMessage

// ID returns the codec id ("" if absent).
func (c Config) ID() string {
	var s string
	json.Unmarshal(c["id"], &s)
	return s
}

// Has reports whether key is present and not null.
func (c Config) Has(key string) bool {
	v, ok := c[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// String returns the string under key, or def when it is absent or null.
func (c Config) String(key, def string) (string, error) {
	if !c.Has(key) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(c[key], &s); err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrConfig, key, err)
	}
	return s, nil
}

// Int returns the integer under key, or def when it is absent or null.
// Integral floats (5.0) are accepted, as Python writers sometimes emit them.
func (c Config) Int(key string, def int) (int, error) {
	if !c.Has(key) {
		return def, nil
	}
	f, err := c.Float(key, 0)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%w: %q: %v is not an integer", ErrConfig, key, f)
	}
	return int(f), nil
}

// Float returns the number under key, or def when it is absent or null.
func (c Config) Float(key string, def float64) (float64, error) {
	if !c.Has(key) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(c[key], &f); err != nil {
		return 0, fmt.Errorf("%w: %q: %v", ErrConfig, key, err)
	}
	return f, nil
}

// constructors maps a numcodecs id to the function that builds its decoder.
// Each codec's file registers itself in an init function, as image formats
// do with image.RegisterFormat.
var constructors = map[string]func(Config) (Decoder, error){}

func register(id string, fn func(Config) (Decoder, error)) {
	if _, dup := constructors[id]; dup {
		panic("codec: registered twice: " + id)
	}
	constructors[id] = fn
}

// notRaw lists the object codecs: their output is Python objects, not bytes
// of a fixed-size dtype, so arrays using them are passed through unchanged.
var notRaw = map[string]bool{
	"vlen-utf8": true, "vlen-bytes": true, "vlen-array": true,
	"json": true, "json2": true, "msgpack": true, "msgpack2": true,
	"pickle": true, "categorize": true,
}

// New returns the decoder for one numcodecs configuration (a JSON object with
// an "id"). Unknown ids give an error wrapping ErrUnknownCodec that names the
// id; object codecs give one wrapping ErrNotRaw.
func New(config json.RawMessage) (Decoder, error) {
	var c Config
	if err := json.Unmarshal(config, &c); err != nil || c == nil {
		return nil, fmt.Errorf("%w: not a JSON object: %s", ErrConfig, config)
	}
	return NewConfig(c)
}

// NewConfig is New for an already parsed configuration.
func NewConfig(c Config) (Decoder, error) {
	id := c.ID()
	if notRaw[id] {
		return nil, fmt.Errorf("%w: object codec %q", ErrNotRaw, id)
	}
	fn, ok := constructors[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownCodec, id)
	}
	d, err := fn(c)
	if err != nil {
		return nil, fmt.Errorf("codec %q: %w", id, err)
	}
	return d, nil
}

// IDs returns the registered codec ids, sorted.
func IDs() []string { return sortedIDs(constructors) }

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
