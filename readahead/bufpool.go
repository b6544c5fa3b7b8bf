package readahead

import (
	"math/bits"
	"sync"
)

// A bufPool keeps buffers that their users are done with (decoded chunks
// the kernel has read, stored values once decoded) for the next use of
// the same size class: memory already mapped in, unlike a fresh
// allocation, which costs a page fault per 4 KiB and gives the garbage
// collector work. It holds at most max bytes; buffers beyond that go to
// the collector. It is safe for concurrent use.
type bufPool struct {
	class func(n int) int // immutable: the capacity a buffer of n bytes gets

	mu    sync.Mutex
	max   int64            // the most bytes held in free (setMax lowers it under memory pressure)
	free  map[int][][]byte // by capacity
	bytes int64            // held in free
	hits  int64            // buffers used again
}

// newBufPool returns a pool of at most max bytes whose buffers have the
// capacity class(n) for n bytes; a nil class gives each length its own
// (decoded chunks, whose cap must be their size).
func newBufPool(max int64, class func(n int) int) *bufPool {
	if class == nil {
		class = func(n int) int { return n }
	}
	return &bufPool{max: max, class: class, free: map[int][][]byte{}}
}

// get returns a buffer of n bytes and capacity class(n) (its contents are
// whatever it held).
func (p *bufPool) get(n int) []byte {
	c := p.class(n)
	p.mu.Lock()
	if bs := p.free[c]; len(bs) > 0 {
		b := bs[len(bs)-1]
		bs[len(bs)-1] = nil
		p.free[c] = bs[:len(bs)-1]
		p.bytes -= int64(c)
		p.hits++
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, c)
}

// put gives b back for another use, unless the pool is full or b's
// capacity is no class of the pool's (a buffer from elsewhere).
func (p *bufPool) put(b []byte) {
	c := cap(b)
	if c == 0 || p.class(c) != c {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+int64(c) > p.max {
		return
	}
	p.free[c] = append(p.free[c], b[:c])
	p.bytes += int64(c)
}

// setMax changes the bytes the pool may hold to max, dropping buffers
// beyond it (to the garbage collector).
func (p *bufPool) setMax(max int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.max = max
	for c, bs := range p.free {
		for len(bs) > 0 && p.bytes > p.max {
			bs[len(bs)-1] = nil
			bs = bs[:len(bs)-1]
			p.bytes -= int64(c)
		}
		p.free[c] = bs
	}
}

// reuses returns how many buffers get has handed out again.
func (p *bufPool) reuses() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

// sizeClass rounds n up to the next of 4 KiB, 6 KiB, 8 KiB, 12 KiB, ...:
// powers of two and the halfway points between them, so that values of
// every size share a few classes at no more than a third of waste.
func sizeClass(n int) int {
	if n <= 4<<10 {
		return 4 << 10
	}
	p := 1 << (bits.Len(uint(n-1)) - 1) // the power of two below n
	if h := p + p/2; n <= h {
		return h
	}
	return 2 * p
}
