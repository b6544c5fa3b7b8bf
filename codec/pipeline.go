package codec

import (
	"encoding/json"
	"fmt"
	"sync"
)

// An EncodedSizer is a Decoder whose encoded size follows from its decoded
// size, as it does for filters and checksums (but not for compressors).
// Pipelines use it to size the buffers between stages exactly.
type EncodedSizer interface {
	EncodedLen(decodedLen int) (int, error)
}

// Raw is the identity decoder: it copies src to dst. It serves arrays stored
// without compressor or filters.
type Raw struct{}

var _ Decoder = Raw{}

func (Raw) Decode(dst, src []byte) ([]byte, error) {
	if len(src) > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	return append(dst, src...), nil
}

func (Raw) EncodedLen(n int) (int, error) { return n, nil }

// A Pipeline decodes through its stages in order: Stages[0] sees the stored
// bytes (the compressor), the last stage writes the chunk bytes.
type Pipeline struct {
	Stages []Decoder
}

var _ Decoder = (*Pipeline)(nil)

// Chain returns a decoder that runs stages in order. With one stage it
// returns that stage; with none it returns Raw.
func Chain(stages ...Decoder) Decoder {
	switch len(stages) {
	case 0:
		return Raw{}
	case 1:
		return stages[0]
	}
	return &Pipeline{Stages: stages}
}

// V2 returns the decoder for a Zarr v2 array: the compressor first, then the
// filters in reverse list order. compressor may be empty or JSON null; filters
// may be nil. The result writes the chunk bytes exactly as an uncompressed
// zarr-python store holds them.
func V2(compressor json.RawMessage, filters []json.RawMessage) (Decoder, error) {
	var stages []Decoder
	if len(compressor) > 0 && string(compressor) != "null" {
		d, err := New(compressor)
		if err != nil {
			return nil, err
		}
		stages = append(stages, d)
	}
	for i := len(filters) - 1; i >= 0; i-- {
		d, err := New(filters[i])
		if err != nil {
			return nil, err
		}
		stages = append(stages, d)
	}
	return Chain(stages...), nil
}

// slack bounds the buffer for a stage whose input size cannot be derived:
// a compressor used as a filter. Encoded data is never much larger than what
// it encodes.
func slack(n int) int { return 2*n + 4096 }

var bufs sync.Pool // of *[]byte, intermediate buffers, kept at full capacity

// getBuf returns a buffer of capacity at least n. Callers slice it to the
// capacity they want, so that the pooled slice keeps its whole array: a
// large buffer lent for a small chunk is still large when it comes back.
func getBuf(n int) *[]byte {
	if p, _ := bufs.Get().(*[]byte); p != nil && cap(*p) >= n {
		return p
	}
	b := make([]byte, 0, n)
	return &b
}

func putBuf(p *[]byte) { *p = (*p)[:0]; bufs.Put(p) }

// Decode runs the stages. Intermediate buffers are sized backwards from the
// room left in dst, through each stage's EncodedLen.
func (p *Pipeline) Decode(dst, src []byte) ([]byte, error) {
	n := len(p.Stages)
	var small [8]int
	room := small[:] // room[k]: output capacity of stage k
	if n > len(small) {
		room = make([]int, n)
	}
	room[n-1] = cap(dst) - len(dst)
	for k := n - 1; k > 0; k-- {
		in := slack(room[k])
		if s, ok := p.Stages[k].(EncodedSizer); ok {
			var err error
			if in, err = s.EncodedLen(room[k]); err != nil {
				return dst, err
			}
		}
		room[k-1] = in
	}
	in := src
	var prev *[]byte
	for k := 0; k < n-1; k++ {
		buf := getBuf(room[k])
		out, err := p.Stages[k].Decode((*buf)[:0:room[k]], in)
		if prev != nil {
			putBuf(prev)
		}
		if err != nil {
			putBuf(buf)
			return dst, err
		}
		in, prev = out, buf
	}
	out, err := p.Stages[n-1].Decode(dst, in)
	if prev != nil {
		putBuf(prev)
	}
	return out, err
}

// EncodedLen is defined when every stage has one.
func (p *Pipeline) EncodedLen(n int) (int, error) {
	for k := len(p.Stages) - 1; k >= 0; k-- {
		s, ok := p.Stages[k].(EncodedSizer)
		if !ok {
			return 0, fmt.Errorf("%w: stage %d has no fixed encoded size", ErrConfig, k)
		}
		var err error
		if n, err = s.EncodedLen(n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// DecodeFull decodes src into dst[:0] and checks that the result fills
// cap(dst) exactly, as every Zarr chunk must.
func DecodeFull(d Decoder, dst, src []byte) ([]byte, error) {
	out, err := d.Decode(dst[:0], src)
	if err != nil {
		return out, err
	}
	if len(out) != cap(dst) {
		return out, fmt.Errorf("%w: decoded %d bytes, want %d", ErrCorrupt, len(out), cap(dst))
	}
	return out, nil
}
