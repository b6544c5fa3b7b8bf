package readahead

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A chunk is one decoded chunk, held either as bytes on the heap (data) or
// in a file (f): a memfd it was decoded into, or the stored file of a chunk
// stored uncompressed. Its bytes never change.
//
// Heap chunks are plain values: the garbage collector frees them once no
// tier and no FUSE reply refers to them. File chunks hold a file
// descriptor, which must be closed as soon as nobody needs it (the kernel
// counts its pages against the machine, not against our heap), so they
// are reference-counted: every holder (a tier, staging, an open chunk
// file) owns one reference, and the last release closes the file.
type chunk struct {
	data  []byte   // heap chunks; shared, never modified
	f     *os.File // file chunks; read-only after decoding
	size  int64    // the decoded size: len(data), or the file's size
	memfd bool     // f is a memfd of ours (counted in the Loader's file bytes)

	refs   atomic.Int64 // file chunks: holders; f is closed when it drops to 0
	served atomic.Int64 // bytes handed out by Loader.Read, to drop the chunk once the kernel has all of it
	files  *fileStats   // where a memfd's bytes are counted; nil for other chunks
}

// heapChunk wraps decoded bytes.
func heapChunk(b []byte) *chunk { return &chunk{data: b, size: int64(len(b))} }

// acquire takes a reference for a new holder. It fails once the chunk has
// been released by its last holder (a file chunk that was closed): the
// caller must then load the chunk again. Heap chunks never fail.
func (c *chunk) acquire() bool {
	if c.f == nil {
		return true
	}
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

// release gives up a holder's reference; the last one closes the file.
func (c *chunk) release() {
	if c.f == nil {
		return
	}
	if c.refs.Add(-1) == 0 {
		if c.files != nil {
			c.files.remove(c.size)
		}
		c.f.Close()
	}
}

// bytes returns the chunk's bytes: the heap slice itself (shared), or a
// copy read from the file.
func (c *chunk) bytes() ([]byte, error) {
	if c.f == nil {
		return c.data, nil
	}
	b := make([]byte, c.size)
	if _, err := c.f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && c.size == 0) {
		return nil, fmt.Errorf("reading decoded chunk: %w", err)
	}
	return b, nil
}

// fileStats counts the memfds alive and their bytes, over every holder:
// tiers, staging, and files the kernel or a reader still has open after
// the tiers let them go.
type fileStats struct {
	n, bytes atomic.Int64
}

func (s *fileStats) add(n int64)    { s.n.Add(1); s.bytes.Add(n) }
func (s *fileStats) remove(n int64) { s.n.Add(-1); s.bytes.Add(-n) }

// newMemfd returns a file chunk of size bytes in a new memfd, with one
// reference (the caller's), and the file's bytes mapped for writing. The
// caller fills the mapping, then calls unmap; on failure it calls
// c.release() after unmap.
func newMemfd(size int64, files *fileStats) (c *chunk, mapping []byte, err error) {
	fd, err := unix.MemfdCreate("zfuse-chunk", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:zfuse-chunk")
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("memfd: %w", err)
	}
	if size > 0 {
		// MAP_POPULATE allocates every page in one call instead of a
		// page fault per 4 KiB while the decoder writes.
		mapping, err = unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("memfd mmap: %w", err)
		}
	}
	c = &chunk{f: f, size: size, memfd: true, files: files}
	c.refs.Store(1)
	files.add(size)
	return c, mapping, nil
}

// unmap unmaps a mapping newMemfd returned. The pages stay in the memfd.
func unmap(mapping []byte) {
	if len(mapping) > 0 {
		_ = unix.Munmap(mapping)
	}
}

// fileChunk wraps an open file of exactly size bytes (a stored chunk),
// with one reference (the caller's).
func fileChunk(f *os.File, size int64) *chunk {
	c := &chunk{f: f, size: size}
	c.refs.Store(1)
	return c
}

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
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.c.f != nil {
		return f.c.f.ReadAt(p, off)
	}
	if off >= f.c.size {
		return 0, io.EOF
	}
	n := copy(p, f.c.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases the chunk. Further calls do nothing.
func (f *File) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.c.release()
	}
	return nil
}
