package codec

import (
	"math/bits"
	"sync"
)

// The buffer pool of the pipelines' intermediate stages (zfuse compress
// takes its chunk and encode buffers from it too): a run allocates as
// many buffers as it has in flight, not one per chunk. Buffers of
// different sizes go to different pools, one per size class (four a
// power of two, so a buffer is at most a quarter larger than asked for):
// in one pool a buffer too small for the next caller is dropped and a new
// one made, and callers that ask for two sizes in turn (a chunk, and its
// encoding, a little larger) would make garbage of each buffer.

// Class 0 is buffers of 4 KiB (asks of up to 4 KiB share it); above,
// class (e-12)*4+q is the size 1<<e + q<<(e-2), q from 1 to 4.
const minShift = 12

var bufs [(64 - minShift) * 4]sync.Pool // of *[]byte, kept at full capacity

// classUp returns the smallest class whose size holds n, and that size.
func classUp(n int) (int, int) {
	if n <= 1<<minShift {
		return 0, 1 << minShift
	}
	e := bits.Len(uint(n-1)) - 1 // 1<<e < n <= 1<<(e+1)
	step := 1 << (e - 2)
	q := (n - 1<<e + step - 1) / step // 1 to 4
	return (e-minShift)*4 + q, 1<<e + q*step
}

// classDown returns the largest class whose size is at most c, or -1.
func classDown(c int) int {
	if c < 1<<minShift {
		return -1
	}
	e := bits.Len(uint(c)) - 1       // 1<<e <= c < 1<<(e+1)
	q := (c - 1<<e) / (1 << (e - 2)) // 0 to 3; 0: 1<<e, class 4 of the power below
	return (e-minShift)*4 + q
}

// GetBuf returns a buffer of capacity at least n, empty. Callers slice it
// to the capacity they want, so that the pooled slice keeps its whole
// array.
func GetBuf(n int) *[]byte {
	i, size := classUp(n)
	if p, _ := bufs[i].Get().(*[]byte); p != nil {
		return p
	}
	b := make([]byte, 0, size)
	return &b
}

// PutBuf returns p to the pool; the caller keeps no reference to its
// array. A buffer smaller than the smallest class is dropped.
func PutBuf(p *[]byte) {
	if i := classDown(cap(*p)); i >= 0 {
		*p = (*p)[:0]
		bufs[i].Put(p)
	}
}
