package tree

import (
	"github.com/zfuse/zfuse/zarr"
)

// Config.Native: every array presented in C order, little-endian.
//
// netCDF-C's NCZarr (and other readers) ignore "order": "F" and big-endian
// dtypes, and read such arrays as wrong numbers without an error. Under
// Native the tree presents each raw array as zarr.Array.Relayout makes it:
// its chunks are converted while decoded (transposed, byte-swapped), and
// every document describing it says so (.zarray's order and dtype,
// zarr.json's bytes codec, consolidated entries, --as-v2's .zarray, the
// .npy header), so readers that do honour them read the same values
// either way. Chunk files keep their size: only the bytes inside move.

// relayout makes x's array the one Native presents, for an array
// presented raw; it does nothing without Native. It cannot fail for a raw
// array; if it did, the array would be passed through, and the tree say
// why when it keeps it (Tree.warn).
func (t *Tree) relayout(x *array) {
	if !t.native || x.why != nil || x.a == nil {
		return
	}
	a, err := x.a.Relayout(false)
	if err != nil {
		x.why = err
		return
	}
	x.a = a
}

// self is the zarr.Presenter of one array's own document: a for its
// directory, nothing below.
func self(a *zarr.Array) zarr.Presenter {
	return func(dir string) *zarr.Array {
		if dir == "." {
			return a
		}
		return nil
	}
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
