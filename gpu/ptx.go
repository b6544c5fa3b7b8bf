package gpu

import _ "embed"

// The kernels' PTX, generated from gpu/kernels/*.cu by `make kernels` and
// committed, so that building zfuse needs no CUDA toolkit. TestPTXFresh
// checks them against gpu/kernels/SOURCES.sha256.
var (
	//go:embed kernels/lz4.ptx
	lz4PTX string
	//go:embed kernels/shuffle.ptx
	shufflePTX string
)

// Kernel entry points (extern "C" names in the .cu files).
const (
	lz4Kernel       = "zf_lz4"
	unshuffleKernel = "zf_unshuffle"

	lz4Threads       = 128 // __launch_bounds__(128): 4 warps, 4 streams per CTA
	unshuffleThreads = 256 // __launch_bounds__(256)
)
