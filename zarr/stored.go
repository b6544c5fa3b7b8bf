package zarr

import (
	"slices"
	"strconv"
	"strings"
)

// Where each presented chunk is stored. A v2 array and an unsharded v3
// array store each presented chunk under its own key, in the stored key
// encoding; an array presented unsharded stores it as an inner chunk of a
// shard, at an entry of the shard's index. Callers map keys through these
// methods, never by formatting coordinates themselves.

// StoredGrid returns the number of stored values (shards, for a sharded
// array; chunks otherwise) along each dimension. The caller must not
// modify it.
func (a *Array) StoredGrid() []int {
	if a.storedGrid != nil {
		return a.storedGrid
	}
	return a.grid
}

// ChunksPerShard returns the number of presented chunks per stored value
// along each dimension: the inner chunks per shard, for an array presented
// unsharded; 1 each otherwise. The caller must not modify it.
func (a *Array) ChunksPerShard() []int {
	if a.shardPer != nil {
		return a.shardPer
	}
	return slices.Repeat([]int{1}, len(a.grid))
}

// ShardShape returns the stored chunk shape, the shape of a shard, of an
// array presented unsharded (whose Chunks is the inner chunk shape), or
// nil. The caller must not modify it.
func (a *Array) ShardShape() []int { return a.shardShape }

// StoredChunkDir returns the directory, relative to the array, that holds
// the stored values of the presented chunks whose coordinates start with
// p, for keys with the "/" separator: the stored key prefix and the
// stored coordinates p fixes ("c/0" for p = [1] when a shard holds two
// chunks along the first axis); "" for the array's own directory.
func (a *Array) StoredChunkDir(p []int) string {
	parts := make([]string, 0, 1+len(p))
	if a.storedPrefix != "" {
		parts = append(parts, a.storedPrefix)
	}
	per := a.ChunksPerShard()
	for d, c := range p {
		parts = append(parts, strconv.Itoa(c/per[d]))
	}
	return strings.Join(parts, "/")
}

// StoredKey maps the presented chunk at coords to the key of the stored
// value that holds it, relative to the array. For a sharded array (sharded
// true) that is the shard, and inner is the chunk's entry in the shard
// index; otherwise it is the chunk's own stored key and inner is 0.
func (a *Array) StoredKey(coords []int) (key string, inner int, sharded bool) {
	if a.shard == nil {
		return formatKey(a.storedPrefix, a.Separator, coords), 0, false
	}
	rank := len(coords)
	shard := make([]int, rank)
	local := make([]int, rank)
	for d, c := range coords {
		shard[d], local[d] = c/a.shardPer[d], c%a.shardPer[d]
	}
	for i := range rank { // C order over the codec's axes
		ax := i
		if a.perm != nil {
			ax = a.perm[i]
		}
		inner = inner*a.shard.cps[i] + local[ax]
	}
	return formatKey(a.storedPrefix, a.Separator, shard), inner, true
}

// ParseStoredKey returns the stored grid coordinates (shard coordinates for
// a sharded array) of rel, a stored key relative to the array, or false.
func (a *Array) ParseStoredKey(rel string) ([]int, bool) {
	return parseKey(rel, a.storedPrefix, a.Separator, a.StoredGrid())
}

// InnerCoords is the inverse of StoredKey for a sharded array: the
// presented chunk coordinates of entry inner of the shard at shard
// coordinates. It reports false when that inner chunk lies outside the
// array (edge shards have index entries for those) or the array is not
// sharded.
func (a *Array) InnerCoords(shard []int, inner int) ([]int, bool) {
	if a.shard == nil || len(shard) != len(a.grid) || inner < 0 || inner >= a.shard.n {
		return nil, false
	}
	local := Unravel(int64(inner), a.shard.cps)
	coords := make([]int, len(shard))
	for i, l := range local {
		ax := i
		if a.perm != nil {
			ax = a.perm[i]
		}
		coords[ax] = shard[ax]*a.shardPer[ax] + l
	}
	for d, c := range coords {
		if c >= a.grid[d] {
			return nil, false
		}
	}
	return coords, true
}
