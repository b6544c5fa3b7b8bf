package zarr

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/codec"
)

// ChunkLen returns the decoded size of every chunk in bytes: the chunk
// shape times the item size. Edge chunks are full size, as Zarr stores them.
func (a *Array) ChunkLen() int64 { return a.chunkLen }

// Grid returns the number of chunks along each dimension. The caller must
// not modify it.
func (a *Array) Grid() []int { return a.grid }

// NumChunks returns the number of chunks in the grid.
func (a *Array) NumChunks() int64 { return a.numChunks }

// ChunkKey returns the key of the chunk at coords, relative to the array:
// "0.3" or "0/3"; "0" for a 0-d array. For v3 arrays with the default chunk
// key encoding it is "c/0/3" (or "c.0.3"), and "c" for a 0-d array.
func (a *Array) ChunkKey(coords []int) string { return formatKey(a.keyPrefix, a.Separator, coords) }

// KeyPrefix returns what every presented chunk key starts with, before
// its first separator: "c" for a v3 array with the default chunk key
// encoding, "" otherwise (v2 arrays, the v2 encoding, --as-v2 views).
func (a *Array) KeyPrefix() string { return a.keyPrefix }

func formatKey(prefix, sep string, coords []int) string {
	if len(coords) == 0 {
		if prefix == "" {
			return "0"
		}
		return prefix
	}
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteString(sep)
	}
	for i, c := range coords {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(c))
	}
	return b.String()
}

// ParseChunkKey returns the grid coordinates of rel, a key relative to the
// array: the inverse of ChunkKey. It reports false when rel is not a chunk
// key of this array or lies outside the grid.
func (a *Array) ParseChunkKey(rel string) ([]int, bool) {
	return parseKey(rel, a.keyPrefix, a.Separator, a.grid)
}

// BeyondGrid reports whether rel has the form of one of a's chunk keys but
// coordinates outside a's chunk grid: the key of a chunk of the array
// grown beyond the shape a says (written by an append whose metadata is
// not read yet).
func (a *Array) BeyondGrid(rel string) bool {
	unbounded := make([]int, len(a.grid))
	for i := range unbounded {
		unbounded[i] = math.MaxInt
	}
	c, ok := parseKey(rel, a.keyPrefix, a.Separator, unbounded)
	if !ok {
		return false
	}
	for i, x := range c {
		if x >= a.grid[i] {
			return true
		}
	}
	return false
}

// parseKey parses rel as formatKey(prefix, sep, coords) with coords inside
// grid.
func parseKey(rel, prefix, sep string, grid []int) ([]int, bool) {
	if prefix != "" {
		if len(grid) == 0 {
			return []int{}, rel == prefix
		}
		rest, ok := strings.CutPrefix(rel, prefix+sep)
		if !ok {
			return nil, false
		}
		rel = rest
	} else if len(grid) == 0 {
		return []int{}, rel == "0"
	}
	parts := strings.Split(rel, sep)
	if len(parts) != len(grid) {
		return nil, false
	}
	return parseCoords(parts, grid)
}

// parseCoords parses parts as coordinates inside the first len(parts)
// dimensions of grid, each a decimal without sign or leading zeros.
func parseCoords(parts []string, grid []int) ([]int, bool) {
	coords := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n >= grid[i] || p != strconv.Itoa(n) {
			return nil, false
		}
		coords[i] = n
	}
	return coords, true
}

// ParseChunkDir returns the coordinates fixed by rel, a directory of the
// presented chunk keys relative to the array: with the "/" separator,
// each proper prefix of a chunk key that ends before a separator ("c" and
// "c/2" of "c/2/1/0"; "2" and "2/1" of "2/1/0"). It reports false for
// anything else, and always for the "." separator, whose keys have no
// directories.
func (a *Array) ParseChunkDir(rel string) ([]int, bool) {
	if a.Separator != "/" || len(a.grid) == 0 {
		return nil, false
	}
	parts := strings.Split(rel, "/")
	if a.keyPrefix != "" {
		if parts[0] != a.keyPrefix {
			return nil, false
		}
		parts = parts[1:]
	}
	if len(parts) >= len(a.grid) {
		return nil, false
	}
	return parseCoords(parts, a.grid)
}

// Linear returns the index of the chunk at coords in C order over the grid.
func (a *Array) Linear(coords []int) int64 {
	var n int64
	for i, c := range coords {
		n = n*int64(a.grid[i]) + int64(c)
	}
	return n
}

// Coords is the inverse of Linear.
func (a *Array) Coords(linear int64) []int { return Unravel(linear, a.grid) }

// DecodeChunk decodes a stored chunk into dst, whose capacity must be
// ChunkLen, and checks that the result fills it exactly. For an array
// presented unsharded (Shard is not nil) the stored chunk is the inner
// chunk's byte range in its shard, as the shard index gives it.
func (a *Array) DecodeChunk(dst, src []byte) ([]byte, error) {
	if a.decoder == nil {
		return nil, fmt.Errorf("array is passed through: %w", a.PassThrough)
	}
	if int64(cap(dst)) != a.chunkLen {
		dst = make([]byte, 0, a.chunkLen)
	}
	return codec.DecodeFull(a.decoder, dst, src)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
