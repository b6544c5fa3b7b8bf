package compress

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/zarr"
)

// zfuse compress --part K/N splits one job among N processes, on one
// machine or many, that write the same DEST at once. The split is by
// stored object (a chunk, or a shard of a sharded array): no two parts
// write the same object. It is a pure function of the plan and N, so
// every part, and --finish, computes the same one without talking to the
// others. The objects of every encoded array, in plan order and C order
// within an array, form one list weighted by the decoded bytes each holds;
// part k takes the objects whose middle byte falls in the k-th Nth of the
// total. Each part's share is then within one object of a Nth of the job's
// bytes, and a run of contiguous objects in each array it touches. Arrays
// copied as stored (their stored sizes are not known before they are
// read) go whole to one part each, in turn.

// A part is --part K/N: this process writes the share of part k of n.
// The zero part (n 0) is a whole job in one process.
type Part struct{ K, N int }

// ParsePart parses "K/N".
func ParsePart(s string) (Part, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return Part{}, fmt.Errorf("--part %q: want K/N, this process's share K (from 0) of N, such as 0/4 to 3/4", s)
	}
	return Part{k, n}, nil
}

func (p Part) String() string { return fmt.Sprintf("%d/%d", p.K, p.N) }

// A share is the stored objects of one array that one part writes:
// [lo, hi) in C order over the array's stored grid.
type share struct{ lo, hi int64 }

func (s share) has(j int64) bool { return s.lo <= j && j < s.hi }

// objects returns the number of stored objects of d: chunks, or shards.
func objects(d *zarr.Array) int64 {
	if d.NumChunks() == 0 {
		return 0
	}
	n := int64(1)
	for _, g := range d.StoredGrid() {
		n *= int64(g)
	}
	return n
}

// weight returns the decoded bytes of the chunks inside the array that
// stored object j of d holds (a shard at the edge holds fewer), and the
// decoded bytes of all chunks inside the array held by objects before j,
// in C order. Both take O(rank): no walk over the objects.
func weight(d *zarr.Array, j int64) (w, before int64) {
	grid, per, sg := d.Grid(), d.ChunksPerShard(), d.StoredGrid()
	s := zarr.Unravel(j, sg)
	inside := func(ax, x int) int64 { return int64(min(per[ax], grid[ax]-x*per[ax])) } // chunks along ax in object x
	upto := func(ax, x int) int64 { return int64(min(x*per[ax], grid[ax])) }           // chunks along ax in objects 0..x-1
	w = 1
	for ax := range grid {
		// Objects before j that agree with it on the axes before ax and
		// lie before it on ax: every chunk along the later axes.
		n := w * upto(ax, s[ax])
		for bx := ax + 1; bx < len(grid); bx++ {
			n *= int64(grid[bx])
		}
		before += n
		w *= inside(ax, s[ax])
	}
	return w * d.ChunkLen(), before * d.ChunkLen()
}

// split returns the shares of n parts: shares[i][k] is part k's share of
// encoded[i], an array's encoding (nil for an array copied as stored,
// whose shares are empty; see owner).
func split(encoded []*zarr.Array, n int) [][]share {
	// Where each array's bytes start in the job, and the job's bytes.
	var total uint64
	bases := make([]uint64, len(encoded))
	counts := make([]int64, len(encoded))
	for i, d := range encoded {
		bases[i] = total
		if d == nil {
			continue
		}
		if counts[i] = objects(d); counts[i] > 0 {
			w, before := weight(d, counts[i]-1)
			total += uint64(before + w)
		}
	}
	out := make([][]share, len(encoded))
	for i, d := range encoded {
		out[i] = make([]share, n)
		m := counts[i]
		if total == 0 { // nothing but empty chunks (a zero-size dtype)
			out[i][0] = share{0, m}
			continue
		}
		// The part of object j: where the middle of its bytes falls. It
		// grows with j, so each part's objects are a run, found by binary
		// search; 128-bit products, as a job's bytes times n may not fit
		// in 64 bits.
		partOf := func(j int64) int {
			w, before := weight(d, j)
			hi, lo := bits.Mul64(2*(bases[i]+uint64(before))+uint64(w), uint64(n))
			q, _ := bits.Div64(hi, lo, 2*total)
			return int(q)
		}
		lo := int64(0)
		for k := range n {
			hi := lo + int64(sort.Search(int(m-lo), func(x int) bool { return partOf(lo+int64(x)) > k }))
			out[i][k] = share{lo, hi}
			lo = hi
		}
	}
	return out
}

// owner returns the part that copies an array copied as stored: the
// i-th such array of the plan goes to part i mod n.
func owner(i, n int) int { return i % n }
