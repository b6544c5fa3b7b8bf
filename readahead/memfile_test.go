package readahead

import (
	"bytes"
	"fmt"
	"os"
	"testing"

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
	testutil.Need(t, "a tmpfs at /dev/shm", p.dir != "")
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
	if err != nil || memfds.dir != "" || d.reusable {
		t.Fatalf("outside tmpfs: %v, dir %q, reusable %v", err, memfds.dir, d.reusable)
	}
	memfds.put(d)
	if st.n.Load() != 0 || st.freeN.Load() != 0 {
		t.Errorf("a memfd was kept: %d files, %d free", st.n.Load(), st.freeN.Load())
	}
}
