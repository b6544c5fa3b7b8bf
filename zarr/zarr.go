// Package zarr reads Zarr array and group metadata, maps chunk keys to grid
// coordinates, builds each array's codec pipeline, and rewrites metadata so
// that it says "no compression".
//
// It is pure logic over bytes: it never touches a store. Arrays are
// immutable after parsing and safe for concurrent use.
package zarr

import (
	"encoding/json"
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
	Format    int    // 2 or 3 (an --as-v2 view of a v3 array says 2)
	Shape     []int  // array shape; empty for 0-d
	Chunks    []int  // presented chunk shape; empty for 0-d
	DType     string // numpy typestr as stored, e.g. "<f4", "|b1", or a structured descr in JSON; v3: the equivalent typestr in the stored byte order, else DataType
	ItemSize  int    // bytes per element
	Order     string // "C" or "F": memory order inside a chunk
	Separator string // chunk key separator, "." or "/"
	Codecs    string // the stored pipeline in words, e.g. "blosc(lz4, shuffle) | delta(<i4)"

	Fill []byte // one element holding fill_value in the presented byte order; nil when undefined (or, in v2, unreadable). Read-only.

	// Zarr v3 only (see v3.go).
	DataType string // data_type as written: "int16", or compact JSON for an extension type
	Endian   string // byte order of the presented chunks: "little", "big", or "" for 1-byte types

	// PassThrough, when non-nil, says why the array cannot be presented raw
	// (object dtype, a codec zfuse cannot decode); its files are then served
	// exactly as stored. It wraps codec.ErrNotRaw or codec.ErrUnknownCodec.
	PassThrough error

	decoder        codec.Decoder
	compressor     codec.Config // see Compressor; nil when none
	separatorGiven bool         // the metadata names the separator
	grid           []int        // chunks per dimension
	chunkLen       int64        // decoded bytes per chunk
	numChunks      int64        // product of grid

	// v3: chunk keys and sharding (v3.go, shard.go). Immutable after parsing.
	keyPrefix    string        // presented keys start with keyPrefix+Separator ("c" for the default encoding)
	storedPrefix string        // the same for stored keys
	storedGrid   []int         // stored values (shards) per dimension; nil: same as grid
	shard        *Shard        // non-nil when a sharded array is presented unsharded
	shardPer     []int         // presented chunks per shard along each array axis
	shardShape   []int         // the stored chunk (shard) shape along each array axis
	perm         []int         // sharding codec axis i is array axis perm[i]; nil: identity
	unwrap       codec.Decoder // bytes→bytes codecs after the sharding codec; nil when none
	dt           dataType
	fillJSON     json.RawMessage // fill_value as stored (v2 too, for PresentBeside)
	attrs        json.RawMessage // attributes, "{}" when absent
	dimNames     json.RawMessage // dimension_names, nil when absent
	relaid       bool            // presented in another layout than stored (layout.go)
}

// Decoder returns the pipeline that turns a stored chunk into presented
// chunk bytes. It is nil when PassThrough is set.
func (a *Array) Decoder() codec.Decoder { return a.decoder }

// Compressor returns the configuration, in numcodecs form, of the codec
// that Decoder applies first to a stored chunk, so that a caller can tell
// what a codec.Blosc decoder will meet (cname, shuffle) without a chunk: a
// v2 array's "compressor"; for v3, the last bytes→bytes codec of the chunk's
// codec list (of the inner chunks' list for a sharded array presented
// unsharded), as codec.V3Config translates it. It is nil when there is no
// such codec or the array is passed through. The map is shared: the caller
// must not modify it.
func (a *Array) Compressor() codec.Config { return a.compressor }
