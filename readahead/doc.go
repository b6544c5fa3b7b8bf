// Package readahead serves decoded chunks to a mount's tree (tree.Chunks)
// and decodes ahead of the reader.
//
// A cold read pays for the decoding of its chunk, so the Loader watches
// which chunks each reader process takes from each array, predicts the
// next ones (Policy: sequential or strided in chunk-grid order, tolerant
// of small reordering), fetches their stored values concurrently and
// decodes them as one batch, on every core or the GPU, before they are
// asked for; with a Placer (fusemount's) it hands them to the kernel's
// page cache too, so that the read costs what a warm one does.
//
// The one fact to know: the Loader owns three byte budgets. Chunks that have
// been read live in the decoded tier (a cache.LRU); chunks prefetched but
// not yet read wait in a staging area of their own, so that prefetching
// never evicts what readers are using; stored values live in the compressed
// tier (a cache.Cache), so a chunk evicted after decoding costs a decode but
// no store read. Decoded chunks are immutable and shared inside the Loader,
// and leave it only as copies: Chunk returns one, ReadAt and ReadPieces copy
// into the caller's buffer, a Placer sees the bytes only during Place, and a
// File from Open holds its chunk until Close.
//
// readahead imports cache, codec, store and zarr of zfuse, and
// internal/bytesize to format Stats.
package readahead
