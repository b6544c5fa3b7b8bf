// Package readahead serves decoded chunks to zfuse's file system and decodes
// ahead of the reader.
//
// On a cold read the decoder, not FUSE, is the bottleneck, so the Loader
// watches which chunks each reader process takes from each array, predicts
// the next ones (Policy: sequential or strided in chunk-grid order, tolerant
// of small reordering), fetches their stored values concurrently and decodes
// them as one batch, on every core or the GPU, before they are asked for.
//
// The one fact to know: the Loader owns three byte budgets. Chunks that have
// been read live in the decoded tier (a cache.Cache); chunks prefetched but
// not yet read wait in a staging area of their own, never in the decoded
// tier, whose admission policy rejects keys nobody has read; stored values
// live in the compressed tier, so a chunk evicted after decoding costs a
// decode but no store read. Every chunk returned is immutable and shared.
//
// readahead imports cache, codec, store and zarr of zfuse.
package readahead
