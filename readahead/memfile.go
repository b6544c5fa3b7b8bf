package readahead

import (
	"cmp"
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
// work on tmpfs files, not on memfds: where no tmpfs can be had, files
// are memfds, made for one chunk each. It is safe for concurrent use.
//
// Files are made on a tmpfs of the process's own where it may mount one
// (ownTmpfs), else in dir (/dev/shm). On its own tmpfs a file's pages are
// large folios: the kernel then copies a chunk to a reader as one folio,
// not page by page (on the VM measured, a warm 1 MiB read of such a file
// took a sixth of the time of one on /dev/shm, and making and filling one
// again a seventh: docs/performance.md).
type memFiles struct {
	want  string     // immutable: the tmpfs directory asked for; "" for a tmpfs of our own, else /dev/shm
	stats *fileStats // every file alive, the free ones too

	open  sync.Once
	dirfd int    // set once by open: the tmpfs's directory, -1 for memfds
	large bool   // set once by open: dirfd is ownTmpfs, whose files are fallocated
	where string // set once by open: where files are, for the log

	mu    sync.Mutex
	max   int64                // bytes of free files kept (setMax lowers it under memory pressure)
	free  map[int64][]*memFile // by size
	bytes int64                // held in free

	reused, busy atomic.Int64 // files used again; files not used again because someone else held them
}

// newMemFiles returns a pool of at most max free bytes, on dir if it is a
// tmpfs that makes O_TMPFILE files ("": a tmpfs of our own, else /dev/shm),
// else of memfds. Nothing is opened or mounted before the first file.
func newMemFiles(dir string, max int64, stats *fileStats) *memFiles {
	return &memFiles{want: dir, max: max, stats: stats, free: map[int64][]*memFile{}, dirfd: -1}
}

// dir opens, once, where files are made, and says where that is: "" for
// memfds.
func (p *memFiles) dir() string {
	p.open.Do(func() {
		if p.want == "" {
			if fd, err := ownTmpfs(); err == nil && tmpfiles(fd) {
				p.dirfd, p.large, p.where = fd, true, "a tmpfs of its own (huge=within_size)"
				return
			} else if err == nil {
				unix.Close(fd)
			}
		}
		dir := cmp.Or(p.want, "/dev/shm")
		if fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			if tmpfiles(fd) {
				p.dirfd, p.where = fd, dir
				return
			}
			unix.Close(fd)
		}
	})
	return p.where
}

// ownTmpfs mounts a tmpfs of the process's own, attached to no directory
// (the new mount API), and returns its root: it goes when the process
// closes that, or exits. Its files may have large folios (huge=within_size:
// none larger than the file; tmpfs makes folios of any size up to 2 MiB
// since Linux 6.14, only 2 MiB ones before), and it has no size of its
// own (the Loader's budgets bound it). It needs CAP_SYS_ADMIN, as
// passthrough does.
func ownTmpfs() (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"huge", "within_size"}, {"size", "0"}, {"nr_inodes", "0"}, {"mode", "0700"}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	return unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
}

// tmpfiles reports whether the directory fd is on a tmpfs that makes
// O_TMPFILE files.
func tmpfiles(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		return false
	}
	n, err := unix.Openat(fd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	unix.Close(n)
	return true
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
// codec.WithPrefault); but on a tmpfs of our own they are allocated here,
// as large folios, where the decoder's faults would make 4 KiB pages.
func (p *memFiles) create(size int64) (*memFile, error) {
	fd, reusable := -1, false
	if p.dir(); p.dirfd >= 0 {
		if n, err := unix.Openat(p.dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600); err == nil {
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
	if p.large && size > 0 {
		unix.Fallocate(fd, 0, 0, size) // where it fails, the decoder's writes fault pages in
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

// drain closes every free file, and the directory, at Close; files still
// held keep their tmpfs.
func (p *memFiles) drain() {
	defer func() {
		if p.dirfd >= 0 {
			unix.Close(p.dirfd)
		}
	}()
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
