package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: codecs is empty", ErrInvalid)
	}
	var aa, bb []extension
	var ab *extension
	for _, raw := range list {
		e, err := parseExtension(raw)
		if err != nil {
			return nil, fmt.Errorf("codec: %w", err)
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
			return nil, fmt.Errorf("%w: codec %q (%v) out of order", ErrInvalid, e.Name, k)
		}
	}
	if ab == nil {
		return nil, fmt.Errorf("%w: no array→bytes codec", ErrInvalid)
	}
	p := &pipe{unperm: true}
	var aaDesc, bbDesc []string // encode order
	var abDesc string

	// Array→array codecs, encode direction: the shape and item size each
	// one produces.
	type aaStage struct {
		d      codec.Decoder
		outLen int // decoded bytes
	}
	var aas []aaStage
	cur, curItem := append([]int(nil), shape...), itemSize
	for _, e := range aa {
		outLen := prod(cur) * curItem
		if e.Name == "transpose" {
			order, err := transposeOrder(e.Config, len(cur))
			if err != nil {
				return nil, err
			}
			t, err := codec.NewTranspose(cur, order, curItem)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			next := make([]int, len(cur))
			for i, o := range order {
				next[i] = cur[o]
			}
			p.perm = composePerm(p.perm, order)
			aas = append(aas, aaStage{t, outLen})
			aaDesc = append(aaDesc, fmt.Sprintf("transpose(%v)", order))
			cur = next
			continue
		}
		p.unperm = false
		cfg, err := codec.V3Config(e.Name, e.Config, endian)
		if err != nil {
			return nil, err
		}
		d, err := codec.NewConfig(cfg)
		if err != nil {
			return nil, err
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
				return nil, err
			}
			curItem = t.Size
		}
		aas = append(aas, aaStage{d, outLen})
		aaDesc = append(aaDesc, describeConfig(cfg))
	}
	encLen := prod(cur) * curItem // bytes the array→bytes codec sees

	// The array→bytes codec.
	var stages []stage
	abIn := encLen // its input size; 0 when not known in advance
	switch ab.Name {
	case "bytes", "endian":
		e := "little"
		if endian == "big" {
			e = "big"
		}
		abDesc = "bytes(" + e + ")"
		if curItem == 1 {
			abDesc = "bytes"
		}
	case "sharding_indexed":
		shardFill := fill
		if curItem != itemSize {
			shardFill = nil
		}
		s, err := newShard(ab.Config, cur, curItem, shardFill, endian, depth+1)
		if err != nil {
			return nil, err
		}
		p.shard = s
		stages = append(stages, stage{d: s, out: encLen})
		abIn = 0
		abDesc = s.desc
	default:
		cfg, err := codec.V3Config(ab.Name, ab.Config, endian)
		if err != nil {
			return nil, err
		}
		if _, err := codec.NewConfig(cfg); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: array→bytes codec %q", codec.ErrUnknownCodec, ab.Name)
	}

	// Bytes→bytes codecs, decode order (last listed first). Sizes go
	// backwards from abIn: a stage's output is the next stage's input.
	var outer []stage
	out := abIn
	for i := len(bb) - 1; i >= 0; i-- {
		e := bb[i]
		cfg, err := codec.V3Config(e.Name, e.Config, endian)
		if err != nil {
			return nil, err
		}
		d, err := codec.NewConfig(cfg)
		if err != nil {
			return nil, err
		}
		if p.first == nil {
			p.first = cfg
		}
		outer = append(outer, stage{d: d})
		bbDesc = append(bbDesc, describeConfig(cfg)) // decode order already
	}
	for k := len(outer) - 1; k >= 0; k-- { // sizes, from the last decode stage back
		outer[k].out = out
		switch s, ok := outer[k].d.(codec.EncodedSizer); {
		case out == 0:
		case ok:
			in, err := s.EncodedLen(out)
			if err != nil {
				return nil, err
			}
			out = in
		default:
			out = slack(out)
		}
	}
	if len(outer) > 0 {
		p.outer = newChain(outer, shardLimit(encLen))
	}
	stages = append(append([]stage(nil), outer...), stages...)
	descs := append(bbDesc, abDesc)
	for i := len(aas) - 1; i >= 0; i-- {
		stages = append(stages, stage{d: aas[i].d, out: aas[i].outLen})
		descs = append(descs, aaDesc[i])
	}
	p.dec = newChain(stages, shardLimit(encLen))
	p.desc = strings.Join(descs, " | ")
	return p, nil
}

// unknownCodec reports whether zfuse has no decoder for a codec name.
func unknownCodec(e extension) bool {
	if _, known := map[string]bool{"bytes": true, "endian": true, "transpose": true, "sharding_indexed": true}[e.Name]; known {
		return false
	}
	cfg, err := codec.V3Config(e.Name, e.Config, "")
	if err != nil {
		return errors.Is(err, codec.ErrUnknownCodec)
	}
	_, err = codec.NewConfig(cfg)
	return errors.Is(err, codec.ErrUnknownCodec)
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

// slack bounds the input of a stage whose encoded size cannot be derived
// (a compressor): encoded data is never much larger than what it encodes.
func slack(n int) int { return 2*n + 4096 }

// shardLimit bounds buffers of unknown size on the way to a shard that
// decodes to n bytes (an index and per-chunk overhead on top of the data).
func shardLimit(n int) int { return min(4*n+1<<24, 1<<34) }

// describeConfig names a numcodecs configuration in words, like the v2
// description: "zstd(checksum=false level=0)".
func describeConfig(c codec.Config) string {
	b, _ := jsonCompact(c)
	return describeCodec(b)
}

// A stage is one decoder of a chain and the capacity of its output.
type stage struct {
	d   codec.Decoder
	out int // output capacity; 0: unknown, grown from slack(len(in)) up to the chain's limit
}

// A chain runs decoders in order with pooled intermediate buffers. Unlike
// codec.Pipeline it knows most sizes in advance (they follow from the
// chunk shape), and it grows the buffer of a stage whose output size is
// unknown (the bytes before a shard index). Safe for concurrent use.
type chain struct {
	stages []stage
	limit  int
}

func newChain(stages []stage, limit int) codec.Decoder {
	switch len(stages) {
	case 0:
		return codec.Raw{}
	case 1:
		if stages[0].out != 0 {
			return stages[0].d
		}
	}
	return &chain{stages: stages, limit: limit}
}

var chainBufs sync.Pool // of *[]byte

func getChainBuf(n int) *[]byte {
	if p, _ := chainBufs.Get().(*[]byte); p != nil && cap(*p) >= n {
		*p = (*p)[:0]
		return p
	}
	b := make([]byte, 0, n)
	return &b
}

func (c *chain) Decode(dst, src []byte) ([]byte, error) {
	in := src
	var prev *[]byte
	defer func() {
		if prev != nil {
			chainBufs.Put(prev)
		}
	}()
	last := len(c.stages) - 1
	if c.stages[last].out == 0 {
		last++ // the final stage grows too; dst receives a copy
	}
	for k := 0; k < last; k++ {
		buf, out, err := c.run(c.stages[k], in)
		if prev != nil {
			chainBufs.Put(prev)
		}
		prev = buf
		if err != nil {
			return dst, err
		}
		in = out
	}
	if last == len(c.stages) {
		return codec.Raw{}.Decode(dst, in)
	}
	return c.stages[last].d.Decode(dst, in)
}

// run decodes in with one stage into a pooled buffer.
func (c *chain) run(s stage, in []byte) (*[]byte, []byte, error) {
	n := s.out
	if n == 0 {
		n = min(slack(len(in)), c.limit)
	}
	for {
		buf := getChainBuf(n)
		out, err := s.d.Decode((*buf)[:0:n], in)
		if s.out == 0 && errors.Is(err, codec.ErrTooLarge) && n < c.limit {
			chainBufs.Put(buf)
			n = min(2*n, c.limit)
			continue
		}
		return buf, out, err
	}
}
