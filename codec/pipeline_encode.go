package codec

import "encoding/json"

var _ Encoder = Raw{}

// MaxEncodedLen is n: Raw stores the bytes as they are.
func (Raw) MaxEncodedLen(n int) int { return n }

// Encode appends src to dst, within cap(dst).
func (Raw) Encode(dst, src []byte) ([]byte, error) {
	out, err := room(dst, len(src))
	if err != nil {
		return dst, err
	}
	copy(out, src)
	return dst[:len(dst)+len(src)], nil
}

// An encodePipeline encodes through its stages in order, the reverse of a
// Pipeline: Stages[0] sees the chunk bytes (the first filter), the last
// stage writes the stored bytes (the compressor).
type encodePipeline struct {
	Stages []Encoder
}

var _ Encoder = (*encodePipeline)(nil)

// EncodeChain returns an encoder that runs stages in order. With one stage
// it returns that stage; with none it returns Raw.
func EncodeChain(stages ...Encoder) Encoder {
	switch len(stages) {
	case 0:
		return Raw{}
	case 1:
		return stages[0]
	}
	return &encodePipeline{Stages: stages}
}

// MaxEncodedLen composes the stages' bounds.
func (p *encodePipeline) MaxEncodedLen(n int) int {
	for _, s := range p.Stages {
		n = s.MaxEncodedLen(n)
	}
	return n
}

// Encode runs the stages, as Pipeline.Decode does: with pooled
// intermediate buffers, here sized by each stage's bound; the last stage
// writes into dst.
func (p *encodePipeline) Encode(dst, src []byte) ([]byte, error) {
	return runStages(len(p.Stages), dst, src,
		func(k int, in []byte) (int, int) {
			n := p.Stages[k].MaxEncodedLen(len(in))
			return n, n
		},
		func(k int, dst, src []byte) ([]byte, error) { return p.Stages[k].Encode(dst, src) })
}

// EncoderV2 returns the encoder of a Zarr v2 array, the inverse of V2: the
// filters in list order, then the compressor. compressor may be empty or
// JSON null; filters may be nil. itemSize is the array's dtype size, which
// Blosc takes as its typesize (numcodecs takes it from the array).
func EncoderV2(compressor json.RawMessage, filters []json.RawMessage, itemSize int) (Encoder, error) {
	var stages []Encoder
	for _, f := range filters {
		e, err := NewEncoder(f, itemSize)
		if err != nil {
			return nil, err
		}
		stages = append(stages, e)
	}
	if len(compressor) > 0 && string(compressor) != "null" {
		e, err := NewEncoder(compressor, itemSize)
		if err != nil {
			return nil, err
		}
		stages = append(stages, e)
	}
	return EncodeChain(stages...), nil
}
