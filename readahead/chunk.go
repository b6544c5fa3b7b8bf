package readahead

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// A chunk is one decoded chunk, held either as bytes on the heap (data) or
// in a file (f): a memfd, or the stored file of a chunk stored
// uncompressed. Its bytes never change while anyone holds it.
//
// Chunks are reference-counted: every holder (the decoded tier, staging,
// an open File, a read copying bytes out) owns one reference, and the last
// release gives the memory back. That is what lets decode buffers be used
// again (a fresh buffer costs a page fault per 4 KiB, which on the VMs
// measured costs more than decoding into it) and memfds be closed at once
// (the kernel counts their pages against the machine, not our heap). Bytes
// leave a chunk only by copy while a reference is held, never as a slice
// that outlives it.
type chunk struct {
	data  []byte     // heap chunks
	pool  *bufPool   // where data goes back when the last reference goes; nil: to the collector
	f     *os.File   // file chunks
	size  int64      // the decoded size: len(data), or the file's size
	mfds  *fileStats // where a memfd's bytes are counted; nil for other chunks
	mf    *memFile   // a chunk in a memFile, which is f
	files *memFiles  // where mf goes back when the last reference goes

	refs   atomic.Int64 // holders; the memory is given back when it drops to 0
	served atomic.Int64 // bytes handed out by Loader.ReadAt, to drop the chunk once the kernel has all of it
}

// heapChunk wraps decoded bytes, with one reference (the caller's); a
// pooled buffer goes back to pool after the last release.
func heapChunk(b []byte, pool *bufPool) *chunk {
	c := &chunk{data: b, pool: pool, size: int64(len(b))}
	c.refs.Store(1)
	return c
}

// fileChunk wraps an open file of exactly size bytes, with one reference
// (the caller's). mfds is where a memfd of ours is counted, nil for a
// stored file.
func fileChunk(f *os.File, size int64, mfds *fileStats) *chunk {
	c := &chunk{f: f, size: size, mfds: mfds}
	c.refs.Store(1)
	if mfds != nil {
		mfds.add(size)
	}
	return c
}

// memChunk wraps a memFile holding a decoded chunk, with one reference
// (the caller's); the file goes back to files after the last release.
func memChunk(mf *memFile, files *memFiles) *chunk {
	c := &chunk{f: mf.f, size: mf.size, mf: mf, files: files}
	c.refs.Store(1)
	return c
}

// acquire takes a reference for a new holder. It fails once the last
// holder has released the chunk: the caller must then load it again.
func (c *chunk) acquire() bool {
	for {
		n := c.refs.Load()
		if n <= 0 {
			return false
		}
		if c.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives up a holder's reference; the last one gives the memory
// back: the buffer to its pool, the file closed.
func (c *chunk) release() {
	switch n := c.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("readahead: chunk released more often than acquired")
	}
	switch {
	case c.mf != nil:
		c.files.put(c.mf)
		return
	case c.f != nil:
		if c.mfds != nil {
			c.mfds.remove(c.size)
		}
		c.f.Close()
		return
	}
	if c.pool != nil {
		c.pool.put(c.data)
	}
	c.data = nil
}

// readAt copies the chunk's bytes at off into p, as io.ReaderAt does. The
// caller holds a reference.
func (c *chunk) readAt(p []byte, off int64) (int, error) {
	if c.f != nil {
		return c.f.ReadAt(p, off)
	}
	if off >= c.size {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// copyInto returns a copy of the whole chunk, in buf if it has the
// capacity. The caller holds a reference.
func (c *chunk) copyInto(buf []byte) ([]byte, error) {
	b := buf[:0]
	if int64(cap(b)) < c.size {
		b = make([]byte, c.size)
	}
	b = b[:c.size]
	n, err := c.readAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading decoded chunk: %w", err)
	}
	if int64(n) != c.size { // not reached: a reused buf would keep old bytes
		return nil, fmt.Errorf("reading decoded chunk: %d of its %d bytes", n, c.size)
	}
	return b, nil
}

// fileStats counts the memfds alive and their bytes, over every holder:
// tiers, staging, and files the kernel or a reader still has open after
// the tiers let them go, and those kept to hold other chunks (memFiles),
// which are also counted apart, as free.
type fileStats struct {
	n, bytes, peak   atomic.Int64
	freeN, freeBytes atomic.Int64
}

// free counts a file of n bytes as kept for use again; use undoes it.
func (s *fileStats) free(n int64) { s.freeN.Add(1); s.freeBytes.Add(n) }
func (s *fileStats) use(n int64)  { s.freeN.Add(-1); s.freeBytes.Add(-n) }

func (s *fileStats) add(n int64) {
	s.n.Add(1)
	b := s.bytes.Add(n)
	for p := s.peak.Load(); b > p && !s.peak.CompareAndSwap(p, b); p = s.peak.Load() {
	}
}

func (s *fileStats) remove(n int64) { s.n.Add(-1); s.bytes.Add(-n) }

// A File is an open decoded chunk, as Loader.Open returns it: a file the
// kernel can read itself (FUSE passthrough) or the caller reads with
// ReadAt. It holds a reference to the chunk until Close.
type File struct {
	c      *chunk
	closed atomic.Bool
}

// Fd returns the file descriptor; it stays valid until Close. A chunk
// held on the heap has none (-1).
func (f *File) Fd() int {
	if f.c.f == nil {
		return -1
	}
	return int(f.c.f.Fd())
}

// Size returns the chunk's decoded size.
func (f *File) Size() int64 { return f.c.size }

// ReadAt reads the chunk's bytes at off, as io.ReaderAt does.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.c.readAt(p, off) }

// Close releases the chunk. Further calls do nothing.
func (f *File) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.c.release()
	}
	return nil
}
