package readahead

import "github.com/zfuse/zfuse/zarr"

// A Ref names one chunk of an array, and the process that reads it: what
// every read of the Loader (and tree.Chunks) takes.
type Ref struct {
	Array  *zarr.Array
	Path   string // the array's directory in the store, "" at the root
	Coords []int  // the chunk's position in the chunk grid
	PID    uint32 // the reading process; 0 for none (compress, warmup), and not used by Forget
}
