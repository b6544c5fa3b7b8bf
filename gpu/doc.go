// Package gpu decodes batches of LZ4 and Blosc-LZ4 chunks on an NVIDIA GPU.
// A *Decoder is a codec.BatchDecoder factory: for a codec pipeline that has
// a GPU path (numcodecs "lz4", or "blosc" whose chunks use the lz4/lz4hc
// compressor with any shuffle), Batch returns a BatchDecoder that agrees
// with codec.Batch byte for byte.
//
// The one fact to know: the CUDA driver is loaded at run time, so the same
// binary runs everywhere. Where libcuda.so.1 or a device is missing, Open
// returns an error wrapping ErrUnavailable that says why, and the caller
// decodes on the CPU (Router does this); nothing panics or exits.
//
// # How a batch decodes
//
// The host parses every job: a numcodecs LZ4 chunk is one LZ4 stream; a
// Blosc chunk is many (codec.BloscStreams: one per block, or one per byte
// stream of a block when c-blosc split it). The streams of many chunks form
// one flat array of descriptors and their bytes one concatenated input
// buffer, both in pinned host memory (layout.go). Each "slice" of the batch
// (Config.SliceBytes of output) is copied to the device, decoded by one
// launch of zf_lz4 (one warp per stream, bounds-checked, a status per
// stream), unshuffled by one launch of zf_unshuffle (c-blosc 1.x byte and
// bit unshuffle, per block) and copied back, on its own CUDA stream; up to
// Config.Streams slices are in flight, so copies in and out overlap with
// kernels. Jobs the GPU cannot take (another compressor, memcpyed or empty
// Blosc buffers, anything malformed the host can see, chunks larger than a
// slice) are decoded by the CPU decoder in the same call, so results and
// errors are the CPU's own. A stream whose status is not 0 fails its job
// with an error wrapping codec.ErrCorrupt.
//
// The kernels are CUDA C in gpu/kernels, compiled to PTX (compute_80, which
// the driver JIT-compiles for Ampere, Hopper and newer) and embedded;
// `make kernels` regenerates the PTX and TestPTXFresh fails when it is
// stale. emulate.go is the same computation in Go, used to test the host
// side without a GPU.
//
// # Why not gorgonia.org/cu
//
// The first plan for the GPU decoder named gorgonia.org/cu. It is not
// usable here: its package init calls cuInit and os.Exit(1) when there is
// no device, so merely importing it kills a CPU-only process; it has no
// pinned host memory (cuMemAllocHost), which overlapped copies need; and
// it does not build against CUDA 13 headers. This package binds the few
// driver calls it needs with github.com/ebitengine/purego instead
// (cuda.go): no cgo, no CUDA headers or libraries at build time.
//
// # Concurrency
//
// A Decoder and the BatchDecoders it returns are safe for concurrent use.
// The CUDA context is the device's primary context; every driver call runs
// on a goroutine locked to its OS thread with that context made current.
package gpu
