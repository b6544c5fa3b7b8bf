package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/zfuse/zfuse/codec"
)

// An array converted in place from v2 to v3 (zarr-python 3's "zarr migrate
// v3", zarrs' to_v3 without erasing the v2 metadata; zarrs' test data holds
// such directories) has two documents for one set of chunk files: .zarray
// and, beside it, a zarr.json with the v2 chunk key encoding. zfuse
// presents such a directory's v2 view, and serves zarr.json too when it
// describes the same chunks: PresentBeside.

// ErrDisagree means a zarr.json stored beside a .zarray does not describe
// the chunks the .zarray describes. The wrapping error says how they differ.
var ErrDisagree = errors.New("zarr: zarr.json does not describe the chunks .zarray does")

// PresentBeside returns the zarr.json to serve beside the .zarray of v2,
// the v2 view (ParseV2) of the directory whose stored zarr.json is
// zarrJSON, when that view is presented raw: the stored document with its
// codecs replaced by one bytes codec in v2's byte order, after a transpose
// that reverses the axes when v2's order is F, so that it describes the
// chunk bytes the v2 view serves; everything else is kept. It fails when
// zarr.json is not such a description of the same chunks: invalid
// metadata (ErrInvalid), an array zfuse would pass through (its
// PassThrough error), or an error wrapping ErrDisagree that says how the
// documents differ (a group; a sharded array; another shape, chunk shape,
// data type or byte order, chunk key, memory order or fill value).
func PresentBeside(zarrJSON []byte, v2 *Array) ([]byte, error) {
	a, g, err := ParseV3(zarrJSON)
	switch {
	case err != nil:
		return nil, err
	case g != nil:
		return nil, fmt.Errorf("%w: zarr.json is a group", ErrDisagree)
	case a.PassThrough != nil:
		return nil, a.PassThrough
	case a.Shard() != nil:
		return nil, fmt.Errorf("%w: zarr.json is sharded: its chunks are shards", ErrDisagree)
	case !slices.Equal(a.Shape, v2.Shape):
		return nil, fmt.Errorf("%w: shape %v, .zarray %v", ErrDisagree, a.Shape, v2.Shape)
	case !slices.Equal(a.Chunks, v2.Chunks):
		return nil, fmt.Errorf("%w: chunk shape %v, .zarray %v", ErrDisagree, a.Chunks, v2.Chunks)
	case !a.dt.sameElements(v2.dt):
		return nil, fmt.Errorf("%w: data type %s (%s), .zarray %s", ErrDisagree, a.DataType, a.DType, v2.DType)
	}
	last := make([]int, len(a.grid))
	for d, n := range a.grid {
		last[d] = max(n-1, 0)
	}
	for _, c := range [][]int{make([]int, len(a.grid)), last} {
		if k, k2 := a.ChunkKey(c), v2.ChunkKey(c); k != k2 {
			return nil, fmt.Errorf("%w: chunk key %q, .zarray %q", ErrDisagree, k, k2)
		}
	}
	m, err := parseV3Doc(zarrJSON)
	if err != nil {
		return nil, err
	}
	order, err := storedOrder(m["codecs"], len(a.Shape))
	if err != nil {
		return nil, err
	}
	if want := v2.Order; order != want && len(a.Shape) > 1 { // one axis: C and F are the same
		return nil, fmt.Errorf("%w: chunks in %s order, .zarray %s", ErrDisagree, order, want)
	}
	if same, err := a.sameFill(v2.fillJSON); err != nil || !same {
		return nil, fmt.Errorf("%w: fill_value %s, .zarray %s", ErrDisagree, bytes.TrimSpace(a.fillJSON), bytes.TrimSpace(v2.fillJSON))
	}
	codecs := a.presentedCodecs()
	if order == "F" {
		rev := make([]int, len(a.Shape))
		for i := range rev {
			rev[i] = len(rev) - 1 - i
		}
		o, _ := jsonCompact(rev)
		codecs = slices.Concat([]byte(`[{"name":"transpose","configuration":{"order":`), o, []byte(`}},`), codecs[1:])
	}
	m["codecs"] = codecs
	return jsonIndent(m, "  ")
}

// storedOrder returns the memory order in which the v3 codec list stores
// a chunk for its array→bytes codec: "C" when its transposes compose to
// the identity, "F" when they reverse the axes (as a v2 order "F" does).
func storedOrder(list json.RawMessage, rank int) (string, error) {
	var codecs []json.RawMessage
	if err := json.Unmarshal(list, &codecs); err != nil {
		return "", fmt.Errorf("%w: codecs must be a list", ErrInvalid)
	}
	var perm []int
	for _, raw := range codecs {
		e, err := parseExtension(raw)
		if err != nil {
			return "", fmt.Errorf("codec: %w", err)
		}
		if codec.KindOfV3(e.Name) != codec.ArrayToArray {
			break // array→array codecs come first
		}
		if e.Name == "transpose" {
			order, err := transposeOrder(e.Config, rank)
			if err != nil {
				return "", err
			}
			perm = composePerm(perm, order)
		}
	}
	if perm == nil || isIdentity(perm) {
		return "C", nil
	}
	for i, p := range perm {
		if p != rank-1-i {
			return "", fmt.Errorf("%w: transposes %v store chunks in neither C nor F order", ErrDisagree, perm)
		}
	}
	return "F", nil
}

// sameFill reports whether v2Fill, the fill_value of a .zarray, gives the
// same element as a's fill_value (NaNs of any payload are the same).
func (a *Array) sameFill(v2Fill json.RawMessage) (bool, error) {
	if len(bytes.TrimSpace(v2Fill)) == 0 {
		v2Fill = json.RawMessage("null")
	}
	f, err := a.dt.fill(v2Fill)
	if err != nil {
		return false, err
	}
	if bytes.Equal(f, a.Fill) {
		return true, nil
	}
	if a.dt.Kind == 'f' && f != nil && a.Fill != nil {
		return math.IsNaN(a.dt.Float(f)) && math.IsNaN(a.dt.Float(a.Fill)), nil
	}
	return false, nil
}
