// Package zarr reads Zarr array and group metadata, maps chunk keys to grid
// coordinates, builds each array's codec pipeline, and rewrites metadata so
// that it says "no compression".
//
// It is pure logic over bytes: it never touches a store. Arrays are
// immutable after parsing and safe for concurrent use.
package zarr

import (
	"errors"

	"github.com/zfuse/zfuse/codec"
)

// Metadata file names of Zarr v2.
const (
	ArrayFile        = ".zarray"
	GroupFile        = ".zgroup"
	AttrsFile        = ".zattrs"
	ConsolidatedFile = ".zmetadata"
)

// ErrInvalid means metadata is malformed or absurd (negative or huge shapes,
// unknown dtype). The wrapping error says what is wrong.
var ErrInvalid = errors.New("zarr: invalid metadata")

// An Array is one array's metadata as zfuse presents it.
type Array struct {
	Format    int    // 2 (3 later)
	Shape     []int  // array shape; empty for 0-d
	Chunks    []int  // presented chunk shape; empty for 0-d
	DType     string // numpy typestr as stored, e.g. "<f4", "|b1", or a structured descr in JSON
	ItemSize  int    // bytes per element
	Order     string // "C" or "F": memory order inside a chunk
	Separator string // chunk key separator, "." or "/"
	Codecs    string // the stored pipeline in words, e.g. "blosc(lz4, shuffle) | delta(<i4)"

	// PassThrough, when non-nil, says why the array cannot be presented raw
	// (object dtype, a codec zfuse cannot decode); its files are then served
	// exactly as stored. It wraps codec.ErrNotRaw or codec.ErrUnknownCodec.
	PassThrough error

	decoder        codec.Decoder
	separatorGiven bool  // the metadata names the separator
	grid           []int // chunks per dimension
	chunkLen       int64 // decoded bytes per chunk
	numChunks      int64 // product of grid
}

// Decoder returns the pipeline that turns a stored chunk into presented
// chunk bytes. It is nil when PassThrough is set.
func (a *Array) Decoder() codec.Decoder { return a.decoder }
