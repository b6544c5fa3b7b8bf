package readahead

import (
	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/zarr"
)

// A Route says what decodes the chunks of an array, and why. RouteOf
// decides it, for the Loader, for zfuse info's DECODER column and for the
// metrics' decoder label alike.
type Route struct {
	// Decoder names what decodes the chunks: "cpu", "gpu", or "none" for
	// chunks stored uncompressed, which are served as stored.
	Decoder string
	// Why says why, in a few words: "blosc lz4 shuffle", "zstd has no
	// GPU kernel", "stored uncompressed"; "" for codecs over whole shards.
	Why string
	// Shards is how a sharded array's chunks are read: "inner-by-range"
	// (each inner chunk by itself, its shard's index cached) or
	// "whole-shard" (codecs over the whole shard, which the CPU undoes
	// chunk by chunk); "" for an array that is not sharded.
	Shards string
	// Batch decodes batches of the array's chunks; nil where Decoder is
	// "none" or Shards is "whole-shard" (the Loader cuts each chunk from
	// its shard).
	Batch codec.BatchDecoder
}

// String is the route as zfuse info shows it: "gpu: lz4", "cpu: zstd has
// no GPU kernel", "none: stored uncompressed", "cpu,inner-by-range: no
// GPU", "cpu,whole-shard".
func (r Route) String() string {
	s := r.Decoder
	if r.Shards != "" {
		s += "," + r.Shards
	}
	if r.Why != "" {
		s += ": " + r.Why
	}
	return s
}

// RouteOf decides what decodes a's chunks: nothing for chunks stored
// uncompressed (raw), the CPU for codecs over whole shards, else the batch
// decoder pick returns (Config.Decoder: the CPU pool or the GPU, with
// Decoder and Why saying which and why; nil: codec.Batch on the CPU).
// pick is not called for the first two.
func RouteOf(a *zarr.Array, pick func(*zarr.Array) Route) Route {
	var r Route
	switch {
	case a.WholeShard():
		return Route{Decoder: "cpu", Shards: "whole-shard"}
	case raw(a):
		r = Route{Decoder: "none", Why: "stored uncompressed"}
	case pick == nil:
		r = Route{Decoder: "cpu", Why: "codec.Batch", Batch: codec.Batch(a.Decoder())}
	default:
		r = pick(a)
	}
	r.Shards = ""
	if a.Shard() != nil {
		r.Shards = "inner-by-range"
	}
	return r
}
