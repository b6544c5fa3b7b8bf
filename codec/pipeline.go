package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// An EncodedSizer is a Decoder whose encoded size follows from its decoded
// size, as it does for filters and checksums (but not for compressors).
// Pipelines use it to size the buffers between stages exactly.
type EncodedSizer interface {
	EncodedLen(decodedLen int) (int, error)
}

// An EncodedBounder is a Decoder whose encoded size does not follow from
// its decoded size but is bounded by it, more loosely than slack bounds a
// compressor's: a Zarr shard holds an index and per-chunk overhead on top
// of its data. Pipelines use the bound to size the buffer before it.
type EncodedBounder interface {
	EncodedBound(decodedLen int) int
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
// bytes, the last stage writes into dst. It is the one chain of decoders
// in zfuse: a v2 array's compressor and filters, a v3 array's codec list
// (package zarr builds those), and a Zarr shard's index codecs. Safe for
// concurrent use.
//
// Every stage but the last writes into a pooled buffer whose size comes
// backwards from the room in dst: a stage's room is what the next stage
// needs for its own room. That is exact when the next stage is an
// EncodedSizer (filters, checksums, transpose). Otherwise (a compressor, a
// shard) it is only a bound: the next stage's EncodedBound when it is an
// EncodedBounder, slack otherwise; the buffer then starts at slack of the
// stage's input and grows towards the bound while the stage reports
// ErrTooLarge.
type Pipeline struct {
	Stages []Decoder
}

var _ Decoder = (*Pipeline)(nil)

// Chain returns a decoder that runs stages in order. With one stage it
// returns that stage; with none it returns Raw. Stages that are Pipelines
// are spliced in.
func Chain(stages ...Decoder) Decoder {
	for i, s := range stages {
		if p, ok := s.(*Pipeline); ok {
			spliced := append(append(slices.Clip(stages[:i]), p.Stages...), stages[i+1:]...)
			return Chain(spliced...)
		}
	}
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

// slack bounds the encoded size of n bytes for a codec whose encoded size
// cannot be derived, a compressor: encoded data is never much larger than
// what it encodes. It is also the step by which buffers of unknown size
// grow.
func slack(n int) int { return 2*n + 4096 }

// Decode runs the stages.
func (p *Pipeline) Decode(dst, src []byte) ([]byte, error) {
	type room struct {
		n     int
		exact bool // n is what the next stage needs, not a bound
	}
	n := len(p.Stages)
	var small [8]room
	rooms := small[:] // rooms[k]: the output room of stage k
	if n > len(small) {
		rooms = make([]room, n)
	}
	rooms[n-1] = room{cap(dst) - len(dst), true}
	for k := n - 1; k > 0; k-- {
		switch s := p.Stages[k].(type) {
		case EncodedSizer:
			in, err := s.EncodedLen(rooms[k].n)
			if err != nil {
				return dst, err
			}
			rooms[k-1] = room{in, rooms[k].exact}
		case EncodedBounder:
			rooms[k-1] = room{s.EncodedBound(rooms[k].n), false}
		default:
			rooms[k-1] = room{slack(rooms[k].n), false}
		}
	}
	return runStages(n, dst, src,
		func(k int, in []byte) (int, int) {
			r := rooms[k]
			if r.exact {
				return r.n, r.n
			}
			return min(slack(len(in)), r.n), r.n
		},
		func(k int, dst, src []byte) ([]byte, error) { return p.Stages[k].Decode(dst, src) })
}

// runStages passes src through n stages in order (n >= 1), the last one
// writing into dst, the others into pooled buffers: stage k gets a buffer
// of start bytes, and while it reports ErrTooLarge, one of slack of that,
// up to limit bytes (start == limit: one try), as room returns them for
// its input. It serves Pipeline and EncodePipeline.
func runStages(n int, dst, src []byte, room func(k int, in []byte) (start, limit int), stage func(k int, dst, src []byte) ([]byte, error)) ([]byte, error) {
	in := src
	var held *[]byte // the pooled buffer in lies in
	defer func() {
		if held != nil {
			PutBuf(held)
		}
	}()
	for k := 0; k < n-1; k++ {
		start, limit := room(k, in)
		for size := start; ; size = min(slack(size), limit) {
			buf := GetBuf(size)
			out, err := stage(k, (*buf)[:0:size], in)
			if errors.Is(err, ErrTooLarge) && size < limit {
				PutBuf(buf)
				continue
			}
			if held != nil {
				PutBuf(held)
			}
			held = buf
			if err != nil {
				return dst, err
			}
			in = out
			break
		}
	}
	return stage(n-1, dst, in)
}

// DecodeBounded decodes src with d when the decoded size is not known in
// advance, only bounded by limit: it tries len(src) bytes of room, then,
// while d reports ErrTooLarge, slack of that, up to limit. The caller owns
// the result, whose capacity is the room of the last try. It is the growth
// of a Pipeline's bounded stages for a result that outlives the call: not
// from the pool, and first tried at len(src), not slack of it, so that a
// checksum's result does not keep twice its size.
func DecodeBounded(d Decoder, src []byte, limit int) ([]byte, error) {
	for size := min(len(src), limit); ; size = min(slack(size), limit) {
		out, err := d.Decode(make([]byte, 0, size), src)
		if errors.Is(err, ErrTooLarge) && size < limit {
			continue
		}
		return out, err
	}
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
