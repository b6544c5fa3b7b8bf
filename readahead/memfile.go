package readahead

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A memFile is a file in memory holding one decoded chunk for the kernel
// to read itself (FUSE passthrough). A chunk is decoded straight into it,
// through a mapping made for that (mapped): no copy, and, once the file is
// used again for another chunk, no new pages either (a fresh MiB of memory
// costs about four times a reused one on the VMs measured). The mapping
// is dropped once the chunk is in, so that the file's pages count once, as
// the file's, and not in the process's RSS too.
type memFile struct {
	f        *os.File
	size     int64
	reusable bool // an O_TMPFILE on tmpfs, whose leases tell whether others have it open
}

// mapped maps f's bytes for writing; the caller unmaps them with
// unix.Munmap. A file of size 0 gives an empty slice.
func (mf *memFile) mapped() ([]byte, error) {
	if mf.size == 0 {
		return []byte{}, nil
	}
	m, err := unix.Mmap(int(mf.f.Fd()), 0, int(mf.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping a chunk file: %w", err)
	}
	return m, nil
}

// unmap drops a mapping of mapped.
func unmap(m []byte) {
	if len(m) > 0 {
		unix.Munmap(m)
	}
}

// memFiles makes memFiles and keeps those their holders are done with, up
// to max bytes, for the next chunk of the same size. A file is used again
// only if nothing but the Loader has it: the kernel opens a file of its
// own on it for every passthrough open, and a reader's memory map of a
// chunk file keeps that one open after the file is closed, so a chunk's
// bytes must not change while a lease says someone else holds it. Leases
// work on tmpfs files, not on memfds: where /dev/shm is no tmpfs, files
// are memfds, made for one chunk each. It is safe for concurrent use.
type memFiles struct {
	dir   string     // immutable: a tmpfs directory for O_TMPFILE files; "" for memfds
	stats *fileStats // every file alive, the free ones too

	mu    sync.Mutex
	max   int64                // bytes of free files kept (setMax lowers it under memory pressure)
	free  map[int64][]*memFile // by size
	bytes int64                // held in free

	reused, busy atomic.Int64 // files used again; files not used again because someone else held them
}

// newMemFiles returns a pool of at most max free bytes, in dir if it is a
// tmpfs that makes O_TMPFILE files, else of memfds.
func newMemFiles(dir string, max int64, stats *fileStats) *memFiles {
	p := &memFiles{max: max, stats: stats, free: map[int64][]*memFile{}}
	var fs unix.Statfs_t
	if dir != "" && unix.Statfs(dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		if fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600); err == nil {
			unix.Close(fd)
			p.dir = dir
		}
	}
	return p
}

// get returns a file of size bytes, mapped, whose contents are whatever it
// held: a free one if there is one, else a new one.
func (p *memFiles) get(size int64) (*memFile, error) {
	p.mu.Lock()
	if fs := p.free[size]; len(fs) > 0 {
		mf := fs[len(fs)-1]
		fs[len(fs)-1] = nil
		p.free[size] = fs[:len(fs)-1]
		p.bytes -= size
		p.stats.use(size)
		p.mu.Unlock()
		p.reused.Add(1)
		return mf, nil
	}
	p.mu.Unlock()
	return p.create(size)
}

// create makes a file of size bytes. Its pages are not allocated yet: the
// decoder's first writes fault them in, on the pool's workers (see
// codec.WithPrefault).
func (p *memFiles) create(size int64) (*memFile, error) {
	fd, reusable := -1, false
	if p.dir != "" {
		if n, err := unix.Open(p.dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600); err == nil {
			fd, reusable = n, true
		}
	}
	if fd < 0 {
		n, err := unix.MemfdCreate("zfuse-chunk", unix.MFD_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("memfd_create: %w", err)
		}
		fd = n
	}
	mf := &memFile{f: os.NewFile(uintptr(fd), "zfuse-chunk"), size: size, reusable: reusable}
	if err := unix.Ftruncate(fd, size); err != nil {
		mf.f.Close()
		return nil, fmt.Errorf("sizing a chunk file: %w", err)
	}
	p.stats.add(size)
	return mf, nil
}

// put takes back a file whose last holder in the process let go: kept for
// the next chunk of its size if nobody else has it open and there is room,
// else closed (the kernel keeps its pages for whoever still has them).
func (p *memFiles) put(mf *memFile) {
	size := mf.size
	if !mf.reusable || size == 0 {
		p.close(mf)
		return
	}
	if p.others(mf) {
		p.busy.Add(1)
		p.close(mf)
		return
	}
	p.mu.Lock()
	if p.bytes+size > p.max {
		p.mu.Unlock()
		p.close(mf)
		return
	}
	p.free[size] = append(p.free[size], mf)
	p.bytes += size
	p.stats.free(size)
	p.mu.Unlock()
}

// others reports whether a file description other than ours is open on
// mf: a write lease is granted only when none is (fcntl(2)).
func (p *memFiles) others(mf *memFile) bool {
	fd := mf.f.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return true // EAGAIN: someone has it; anything else: assume so
	}
	unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
	return false
}

func (p *memFiles) close(mf *memFile) {
	mf.f.Close()
	p.stats.remove(mf.size)
}

// setMax changes the bytes of free files kept to max, closing those
// beyond it.
func (p *memFiles) setMax(max int64) {
	p.mu.Lock()
	p.max = max
	var gone []*memFile
	for size, fs := range p.free {
		for len(fs) > 0 && p.bytes > p.max {
			gone = append(gone, fs[len(fs)-1])
			fs[len(fs)-1] = nil
			fs = fs[:len(fs)-1]
			p.bytes -= size
		}
		p.free[size] = fs
	}
	p.mu.Unlock()
	for _, mf := range gone {
		p.stats.use(mf.size)
		p.close(mf)
	}
}

// drain closes every free file, at Close.
func (p *memFiles) drain() {
	p.mu.Lock()
	free := p.free
	p.free, p.bytes = map[int64][]*memFile{}, 0
	p.mu.Unlock()
	for size, fs := range free {
		for _, mf := range fs {
			p.stats.use(size)
			p.close(mf)
		}
	}
}
