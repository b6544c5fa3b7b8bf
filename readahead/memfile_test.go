package readahead

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestMemFiles: a file given back is used again for the next chunk of its
// size, unless someone else still has it open or mapped (a reader's map of
// a passthrough chunk outlives its open): then it is closed, and the bytes
// that reader sees never change. Without a tmpfs, files are memfds, never
// used again.
func TestMemFiles(t *testing.T) {
	var st fileStats
	p := newMemFiles("/dev/shm", 1<<20, &st)
	testutil.Need(t, "a tmpfs at /dev/shm", p.dir() != "")
	write := func(mf *memFile, b []byte) {
		t.Helper()
		m, err := mf.mapped()
		if err != nil {
			t.Fatal(err)
		}
		copy(m, b)
		unmap(m)
	}
	a, err := p.get(4096)
	if err != nil {
		t.Fatal(err)
	}
	write(a, bytes.Repeat([]byte{1}, 4096))
	p.put(a)
	if st.freeN.Load() != 1 {
		t.Fatalf("free files %d after a put, want 1", st.freeN.Load())
	}
	b, _ := p.get(4096)
	if b != a || p.reused.Load() != 1 {
		t.Fatalf("the file given back was not used again")
	}
	// A reader maps it through a description of its own and closes that.
	write(b, bytes.Repeat([]byte{'X'}, 4096))
	other, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", b.f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(other.Fd()), 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	other.Close()
	p.put(b)
	if p.busy.Load() != 1 || st.freeN.Load() != 0 {
		t.Errorf("a file still mapped elsewhere was kept (busy %d, free %d)", p.busy.Load(), st.freeN.Load())
	}
	c, _ := p.get(4096)
	write(c, bytes.Repeat([]byte{'Y'}, 4096))
	if !bytes.Equal(m, bytes.Repeat([]byte{'X'}, 4096)) {
		t.Errorf("the reader's map changed under it")
	}
	p.put(c)
	p.drain()
	if st.n.Load() != 0 || st.bytes.Load() != 0 || st.freeN.Load() != 0 {
		t.Errorf("after drain: %d files, %d bytes, %d free", st.n.Load(), st.bytes.Load(), st.freeN.Load())
	}

	memfds := newMemFiles(t.TempDir(), 1<<20, &st) // not a tmpfs
	d, err := memfds.get(4096)
	if err != nil || memfds.dir() != "" || d.reusable {
		t.Fatalf("outside tmpfs: %v, dir %q, reusable %v", err, memfds.dir(), d.reusable)
	}
	memfds.put(d)
	if st.n.Load() != 0 || st.freeN.Load() != 0 {
		t.Errorf("a memfd was kept: %d files, %d free", st.n.Load(), st.freeN.Load())
	}
}

// TestOwnTmpfs: with no directory asked for, files are made on a tmpfs of
// the pool's own (as root), whose pages are large folios: a 2 MiB chunk
// file decoded through its mapping is one folio, not 512 pages (4 KiB
// pages are what /dev/shm gives, and what a reader then copies page by
// page). The file is kept and used again like any other.
func TestOwnTmpfs(t *testing.T) {
	var st fileStats
	p := newMemFiles("", 1<<22, &st)
	defer p.drain()
	testutil.Need(t, "CAP_SYS_ADMIN to mount a tmpfs", p.dir() != "" && p.large)
	const size = 2 << 20
	mf, err := p.get(size)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mf.mapped()
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = byte(i)
	}
	unmap(m)
	heads, tails := folios(t, mf.f, size)
	if heads+tails != size/4096 || tails == 0 {
		t.Errorf("a %d-byte file on its own tmpfs: %d folio heads, %d tails of %d pages, want large folios", size, heads, tails, size/4096)
	}
	p.put(mf)
	if again, _ := p.get(size); again != mf {
		t.Errorf("a file of its own tmpfs was not used again")
	}
}

var touched byte // folios' reads of each page, kept

// folios maps f's first size bytes and counts the pages that head a folio
// (or are one) and the pages that continue one, from /proc/kpageflags
// (root); it skips where that cannot be read.
func folios(t *testing.T, f *os.File, size int) (heads, tails int) {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	pagemap, err1 := os.Open("/proc/self/pagemap")
	flags, err2 := os.Open("/proc/kpageflags")
	testutil.Need(t, "/proc/kpageflags (root)", err1 == nil && err2 == nil)
	defer pagemap.Close()
	defer flags.Close()
	var sum byte
	base := uintptr(unsafe.Pointer(&m[0]))
	var b [8]byte
	for off := 0; off < size; off += 4096 {
		sum += m[off] // map the page
		if _, err := pagemap.ReadAt(b[:], int64((base+uintptr(off))/4096*8)); err != nil {
			t.Fatal(err)
		}
		e := binary.LittleEndian.Uint64(b[:])
		pfn := e & (1<<55 - 1)
		testutil.Need(t, "page frame numbers in /proc/self/pagemap (root)", e>>63 == 1 && pfn != 0)
		if _, err := flags.ReadAt(b[:], int64(pfn*8)); err != nil {
			t.Fatal(err)
		}
		const compoundTail = 1 << 16 // KPF_COMPOUND_TAIL
		if binary.LittleEndian.Uint64(b[:])&compoundTail != 0 {
			tails++
		} else {
			heads++
		}
	}
	touched = sum
	return heads, tails
}
