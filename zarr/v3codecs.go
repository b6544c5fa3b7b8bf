package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zfuse/zfuse/codec"
)

// An extension is one v3 extension object: a bare name ("crc32c") or
// {"name": …, "configuration": {…}, "must_understand": false}.
type extension struct {
	Name     string
	Config   json.RawMessage // the configuration object; nil when absent
	Optional bool            // "must_understand": false
}

func parseExtension(raw json.RawMessage) (extension, error) {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if name == "" {
			return extension{}, fmt.Errorf("%w: empty name", ErrInvalid)
		}
		return extension{Name: name}, nil
	}
	var o struct {
		Name           string          `json:"name"`
		Configuration  json.RawMessage `json:"configuration"`
		MustUnderstand *bool           `json:"must_understand"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.Name == "" {
		return extension{}, fmt.Errorf("%w: %s is not a name or an object with a name", ErrInvalid, raw)
	}
	e := extension{Name: o.Name, Optional: o.MustUnderstand != nil && !*o.MustUnderstand}
	if c := bytes.TrimSpace(o.Configuration); len(c) > 0 && string(c) != "null" {
		if c[0] != '{' {
			return extension{}, fmt.Errorf("%w: %q configuration is not an object", ErrInvalid, o.Name)
		}
		e.Config = c
	}
	return e, nil
}

// A pipe is one v3 codec list made ready to decode chunks of one shape.
type pipe struct {
	dec    codec.Decoder // stored chunk → the chunk in C order, stored byte order
	shard  *Shard        // the array→bytes codec, when it is sharding_indexed
	outer  codec.Decoder // the bytes→bytes codecs after it, decode order; nil when none
	first  codec.Config  // the bytes→bytes codec that decodes first (Array.Compressor); nil when none
	perm   []int         // with shard: codec axis i is chunk axis perm[i] (nil: identity)
	unperm bool          // with shard: every array→array codec is a transpose
	desc   string        // decode order in words
}

// maxNested bounds sharding inside sharding.
const maxNested = 4

// findEndian returns the endian of the bytes codec that ends list
// (following sharding_indexed into its inner codecs); "" when not given.
func findEndian(list []json.RawMessage, depth int) (string, error) {
	if depth > maxNested {
		return "", fmt.Errorf("%w: sharding nested deeper than %d", ErrInvalid, maxNested)
	}
	for _, raw := range list {
		e, err := parseExtension(raw)
		if err != nil {
			return "", fmt.Errorf("codec: %w", err)
		}
		switch e.Name {
		case "bytes", "endian":
			c := codec.Config{}
			json.Unmarshal(e.Config, &c)
			s, err := c.String("endian", "")
			if err != nil || (s != "" && s != "little" && s != "big") {
				return "", fmt.Errorf("%w: bytes endian %s", ErrInvalid, c["endian"])
			}
			return s, nil
		case "sharding_indexed":
			var sc struct {
				Codecs []json.RawMessage `json:"codecs"`
			}
			if err := json.Unmarshal(e.Config, &sc); err != nil {
				return "", fmt.Errorf("%w: sharding_indexed configuration: %v", ErrInvalid, err)
			}
			return findEndian(sc.Codecs, depth+1)
		}
	}
	return "", nil
}

// buildPipe builds the decoder of list for chunks of the given shape and
// item size. fill is one element (nil: zeros) for empty inner chunks of
// nested shards; endian is the stored byte order (findEndian). Structural
// errors wrap ErrInvalid; codecs zfuse cannot decode give errors wrapping
// codec.ErrUnknownCodec, codec.ErrNotRaw or codec.ErrConfig.
func buildPipe(list []json.RawMessage, shape []int, itemSize int, fill []byte, endian string, depth int) (*pipe, error) {
	aa, ab, bb, err := sortCodecs(list)
	if err != nil {
		return nil, err
	}
	p := &pipe{unperm: true}
	aas, aaDesc, cur, curItem, err := p.arrayToArray(aa, shape, itemSize, endian)
	if err != nil {
		return nil, err
	}
	if ab.Name == "sharding_indexed" && curItem != itemSize {
		fill = nil // the shard's elements are no longer the array's
	}
	stages, abDesc, err := p.arrayToBytes(*ab, cur, curItem, fill, endian, depth)
	if err != nil {
		return nil, err
	}
	outer, bbDesc, err := p.bytesToBytes(bb, endian)
	if err != nil {
		return nil, err
	}
	stages = append(append([]codec.Decoder(nil), outer...), stages...)
	descs := append(bbDesc, abDesc)
	for i := len(aas) - 1; i >= 0; i-- {
		stages = append(stages, aas[i])
		descs = append(descs, aaDesc[i])
	}
	p.dec = codec.Chain(stages...) // the sizes between stages follow from the chunk's (codec.Pipeline)
	p.desc = strings.Join(descs, " | ")
	return p, nil
}

// sortCodecs parses list into its array→array codecs, its one
// array→bytes codec and its bytes→bytes codecs, in encode order,
// dropping optional codecs zfuse does not know.
func sortCodecs(list []json.RawMessage) (aa []extension, ab *extension, bb []extension, err error) {
	if len(list) == 0 {
		return nil, nil, nil, fmt.Errorf("%w: codecs is empty", ErrInvalid)
	}
	for _, raw := range list {
		e, err := parseExtension(raw)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("codec: %w", err)
		}
		if e.Optional && unknownCodec(e) {
			continue // must_understand: false, and not understood
		}
		switch k := codec.KindOfV3(e.Name); {
		case k == codec.ArrayToArray && ab == nil:
			aa = append(aa, e)
		case k == codec.ArrayToBytes && ab == nil:
			ab = &e
		case k == codec.BytesToBytes && ab != nil:
			bb = append(bb, e)
		default:
			return nil, nil, nil, fmt.Errorf("%w: codec %q (%v) out of order", ErrInvalid, e.Name, k)
		}
	}
	if ab == nil {
		return nil, nil, nil, fmt.Errorf("%w: no array→bytes codec", ErrInvalid)
	}
	return aa, ab, bb, nil
}

// arrayToArray builds the decoders of the array→array codecs aa, in
// encode order, with their descriptions, and returns the chunk shape and
// item size the last one produces (encode direction).
func (p *pipe) arrayToArray(aa []extension, shape []int, itemSize int, endian string) (aas []codec.Decoder, descs []string, cur []int, curItem int, err error) {
	cur, curItem = append([]int(nil), shape...), itemSize
	for _, e := range aa {
		if e.Name == "transpose" {
			order, err := transposeOrder(e.Config, len(cur))
			if err != nil {
				return nil, nil, nil, 0, err
			}
			t, err := codec.NewTranspose(cur, order, curItem)
			if err != nil {
				return nil, nil, nil, 0, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			next := make([]int, len(cur))
			for i, o := range order {
				next[i] = cur[o]
			}
			p.perm = composePerm(p.perm, order)
			aas = append(aas, t)
			descs = append(descs, fmt.Sprintf("transpose(%v)", order))
			cur = next
			continue
		}
		p.unperm = false
		cfg, d, err := v3Decoder(e, endian)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		switch {
		case cfg.ID() == "packbits":
			cur, curItem = []int{(prod(cur)+7)/8 + 1}, 1
		case cfg.Has("astype"), cfg.Has("encode_dtype"):
			key := "astype"
			if cfg.Has("encode_dtype") {
				key = "encode_dtype"
			}
			s, _ := cfg.String(key, "")
			t, err := codec.ParseDType(s)
			if err != nil {
				return nil, nil, nil, 0, err
			}
			curItem = t.Size
		}
		aas = append(aas, d)
		descs = append(descs, describeConfig(cfg))
	}
	return aas, descs, cur, curItem, nil
}

// arrayToBytes returns the decode stages of the array→bytes codec ab for
// chunks of shape cur and item size curItem (none for bytes, the shard
// decoder for sharding_indexed) and its description.
func (p *pipe) arrayToBytes(ab extension, cur []int, curItem int, fill []byte, endian string, depth int) ([]codec.Decoder, string, error) {
	switch ab.Name {
	case "bytes", "endian":
		if curItem == 1 {
			return nil, "bytes", nil
		}
		if endian == "big" {
			return nil, "bytes(big)", nil
		}
		return nil, "bytes(little)", nil
	case "sharding_indexed":
		s, err := newShard(ab.Config, cur, curItem, fill, endian, depth+1)
		if err != nil {
			return nil, "", err
		}
		p.shard = s
		return []codec.Decoder{s}, s.desc, nil
	}
	if _, _, err := v3Decoder(ab, endian); err != nil {
		return nil, "", err
	}
	return nil, "", fmt.Errorf("%w: array→bytes codec %q", codec.ErrUnknownCodec, ab.Name)
}

// bytesToBytes builds the decoders of the bytes→bytes codecs bb in decode
// order (last listed first), with their descriptions, and sets p.first
// and p.outer.
func (p *pipe) bytesToBytes(bb []extension, endian string) ([]codec.Decoder, []string, error) {
	var outer []codec.Decoder
	var descs []string
	for i := len(bb) - 1; i >= 0; i-- {
		cfg, d, err := v3Decoder(bb[i], endian)
		if err != nil {
			return nil, nil, err
		}
		if p.first == nil {
			p.first = cfg
		}
		outer = append(outer, d)
		descs = append(descs, describeConfig(cfg)) // decode order already
	}
	if len(outer) > 0 {
		p.outer = codec.Chain(outer...)
	}
	return outer, descs, nil
}

// unknownCodec reports whether zfuse has no decoder for a codec name.
func unknownCodec(e extension) bool {
	if _, known := map[string]bool{"bytes": true, "endian": true, "transpose": true, "sharding_indexed": true}[e.Name]; known {
		return false
	}
	_, _, err := v3Decoder(e, "")
	return errors.Is(err, codec.ErrUnknownCodec)
}

// v3Decoder builds the decoder of one v3 codec that codec.V3Config
// translates (every one but bytes, transpose and sharding_indexed), and
// returns its numcodecs configuration too.
func v3Decoder(e extension, endian string) (codec.Config, codec.Decoder, error) {
	cfg, err := codec.V3Config(e.Name, e.Config, endian)
	if err != nil {
		return nil, nil, err
	}
	d, err := codec.NewConfig(cfg)
	return cfg, d, err
}

// transposeOrder reads the transpose codec's "order": a permutation, or
// the strings "C" (identity) and "F" (reversed) of early drafts.
func transposeOrder(conf json.RawMessage, rank int) ([]int, error) {
	var c struct {
		Order json.RawMessage `json:"order"`
	}
	if err := json.Unmarshal(conf, &c); err != nil {
		return nil, fmt.Errorf("%w: transpose configuration", ErrInvalid)
	}
	order := make([]int, rank)
	var s string
	if json.Unmarshal(c.Order, &s) == nil {
		for i := range order {
			switch s {
			case "C":
				order[i] = i
			case "F":
				order[i] = rank - 1 - i
			default:
				return nil, fmt.Errorf("%w: transpose order %q", ErrInvalid, s)
			}
		}
		return order, nil
	}
	if err := json.Unmarshal(c.Order, &order); err != nil || len(order) != rank {
		return nil, fmt.Errorf("%w: transpose order %s for rank %d", ErrInvalid, c.Order, rank)
	}
	seen := make([]bool, rank)
	for _, o := range order {
		if o < 0 || o >= rank || seen[o] {
			return nil, fmt.Errorf("%w: transpose order %v is not a permutation", ErrInvalid, order)
		}
		seen[o] = true
	}
	return order, nil
}

// composePerm applies a transpose by order after perm: the new axis i is
// the old axis order[i], which is the original axis perm[order[i]].
func composePerm(perm, order []int) []int {
	out := make([]int, len(order))
	for i, o := range order {
		out[i] = o
		if perm != nil {
			out[i] = perm[o]
		}
	}
	return out
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// EncodedBound bounds the stored size of a shard that decodes to n bytes:
// an index and per-chunk overhead on top of the data. It sizes the buffers
// before a shard, whose stored size does not follow from n.
func (s *Shard) EncodedBound(n int) int { return min(4*n+1<<24, 1<<34) }

var _ codec.EncodedBounder = (*Shard)(nil)

// describeConfig names a numcodecs configuration in words, like the v2
// description: "zstd(checksum=false level=0)".
func describeConfig(c codec.Config) string {
	b, _ := jsonCompact(c)
	return describeCodec(b)
}
