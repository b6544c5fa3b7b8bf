package readahead

import (
	"slices"
	"strings"

	"github.com/zfuse/zfuse/zarr"
)

// A nameOrder is the order in which a walk of an array's directory in
// listing order meets its chunks. Listings are sorted by name (the
// presented tree sorts them, and so do ls, rsync and Go's os.ReadDir), and
// cp -r, tar and find walk them in that order: "0.0", "0.1", "0.10",
// "0.100", ..., "0.11", ... is no pattern in chunk-grid order, but it is
// the sequence 0, 1, 2, ... in name order. Nested keys ("0/1/2") walk the
// same way, because the separators sort before every digit. The Loader
// runs a second Policy in this order for readers that follow no pattern in
// grid order.
type nameOrder struct {
	pos []int32 // linear chunk index -> position in name order
	lin []int32 // position in name order -> linear chunk index
}

// maxNameOrder bounds the arrays that get a name order (8 bytes a chunk,
// and sorting every key once).
const maxNameOrder = 1 << 22

// newNameOrder computes a's name order, or returns nil if a has more than
// maxNameOrder chunks.
func newNameOrder(a *zarr.Array) *nameOrder {
	n := a.NumChunks()
	if n > maxNameOrder {
		return nil
	}
	keys := make([]string, n)
	lin := make([]int32, n)
	for i := range n {
		keys[i] = a.ChunkKey(a.Coords(i))
		lin[i] = int32(i)
	}
	slices.SortFunc(lin, func(x, y int32) int { return strings.Compare(keys[x], keys[y]) })
	pos := make([]int32, n)
	for p, i := range lin {
		pos[i] = int32(p)
	}
	return &nameOrder{pos: pos, lin: lin}
}

// size is the bytes o holds; 0 for nil (no order).
func (o *nameOrder) size() int64 {
	if o == nil {
		return 0
	}
	return 8 * int64(len(o.pos))
}
