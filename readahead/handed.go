package readahead

// This file is what the Loader remembers of the chunks it gave the kernel
// whole. A chunk that ReadAt or ReadPieces has handed out every byte of
// leaves the decoded tier (the page cache holds it), and so does one a
// Placer placed; without a record of them, another reader's readahead (or
// the same reader's, come back to them) would fetch and decode them again
// for reads the page cache answers: with no compressed tier, a second
// request for the same value. So the Loader keeps their names, within the
// decoded budget's bytes (what the decoded tier would have kept of them),
// and plans no prefetch of those (planLocked).
//
// The kernel may let their pages go before the record forgets them. A
// read of such a chunk then reaches the Loader, which loads it as any
// miss; and since the page cache is being reclaimed, the Loader forgets
// the whole record, so that readahead plans every chunk again rather than
// leave a second pass over a store larger than memory to read each one
// by itself.

// handOver lets the decoded tier drop c, the chunk id, all of whose bytes
// the kernel's page cache now holds, and records that it does.
func (l *Loader) handOver(id string, c *chunk) {
	l.handedWhole(id, c.size) // first, so that no plan finds the chunk nowhere
	if l.decoded.Remove(id, c) {
		l.dropped.Add(1)
	}
}

// handedWhole records that the page cache holds every byte of chunk id,
// size bytes, unless there is no decoded tier, which keeps nothing.
func (l *Loader) handedWhole(id string, size int64) {
	if !l.decodedOff {
		l.handed.Add(id, size)
	}
}

// lostByKernel is told of every read for the page cache (ReadAt,
// ReadPieces) that reaches the Loader, of the chunk r. If the page cache
// was given the chunk whole, it let the pages go, and the record of what
// it holds is forgotten.
func (l *Loader) lostByKernel(r Ref) {
	if r.Array.PassThrough == nil && l.handed.Has(ref(r.Array, r.Path, r.Coords).id) {
		l.handed.Clear()
		l.handedLost.Add(1)
	}
}
