package fusemount

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/tree"
)

// TestNpyMount reads the .npy files through a real mount on every serving
// path: whole, by pread at odd offsets, and through a shared memory map;
// all through READ and the page cache (no chunk is passed through). A
// corrupt chunk's pages are EIO, and the pages of the other chunks read.
func TestNpyMount(t *testing.T) {
	servings(t, func(t *testing.T, serving Serving) {
		s := testutil.NewV2Store(t)
		// Three chunks of 8 KiB from byte 128 on: pages 0 and 1 of the
		// file hold chunk 0 alone, page 5 chunk 2 alone.
		s.Add(t, testutil.V2Array{Path: "broken", Shape: []int{3 * 8192}, Chunks: []int{8192}, DType: "|u1", Order: "C", Sep: ".",
			Value: func(i []int) float64 { return float64(i[0] % 251) }})
		s.Write(t, "broken/1", []byte("this is not zlib"))
		tr, _, logs := newTestTree(t, s.Root, func(c *tree.Config) { c.AsNpy = true })
		dir, srv := mountServing(t, tr, false, serving, false)
		for p, arr := range testutil.NpyFiles {
			b := read(t, dir, p)
			s.Arrays[arr].CheckNpy(t, p, b)
			f, err := os.Open(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			for off := int64(1); off < int64(len(b)); off += 37 {
				got := make([]byte, 13)
				n, err := f.ReadAt(got, off)
				if want := b[off:min(off+13, int64(len(b)))]; n != len(want) || !bytes.Equal(got[:n], want) {
					t.Fatalf("%s: pread [%d, +13): %d bytes %v", p, off, n, err)
				}
			}
			m, err := syscall.Mmap(int(f.Fd()), 0, len(b), syscall.PROT_READ, syscall.MAP_SHARED)
			if err != nil {
				t.Fatalf("%s: mmap: %v", p, err)
			}
			if !bytes.Equal(m, b) {
				t.Errorf("%s: the memory map differs from read(2)", p)
			}
			syscall.Munmap(m)
			f.Close()
		}
		f, err := os.Open(filepath.Join(dir, "broken.npy"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		want := s.Arrays["broken"].Flat()
		for _, r := range []struct {
			off int64
			ok  bool
		}{{128, true}, {9000, false}, {21000, true}, {5000, true}, {16000, false}} {
			got := make([]byte, 10)
			_, err := f.ReadAt(got, r.off)
			switch {
			case r.ok && (err != nil || !bytes.Equal(got, want[r.off-128:r.off-118])):
				t.Errorf("broken.npy [%d, +10), a page of a good chunk: %v, %v", r.off, got, err)
			case !r.ok && !errors.Is(err, syscall.EIO):
				t.Errorf("broken.npy [%d, +10), in the corrupt chunk's pages: %v, want EIO", r.off, err)
			}
		}
		if !strings.Contains(logs.String(), "broken/1") {
			t.Errorf("no log line names the corrupt chunk broken/1:\n%s", logs)
		}
		if st := srv.Stats(); st.PassthroughOpens != 0 || st.Reads == 0 {
			t.Errorf("%v: %d passthrough opens, %d READs: want .npy files read through READ", serving, st.PassthroughOpens, st.Reads)
		}
	})
}

// TestNpyRefresh: under Refresh, an array whose metadata changes (it
// grows, every chunk rewritten) is another .npy file, with a new inode,
// never a mix: the chunks of the old version that the Loader still holds
// (read in part) are not served as the new version's, and a reader that
// holds the old file open gets the old bytes or ESTALE.
func TestNpyRefresh(t *testing.T) {
	const interval = 200 * time.Millisecond
	servings(t, func(t *testing.T, serving Serving) {
		st := testutil.EmptyV2Store(t)
		// 16×1024 <i4 in 8×256 chunks: a row is 4 KiB, the first page of
		// the file holds part of row 0, which lies in chunks 0.0 to 0.3.
		st.Add(t, testutil.V2Array{Path: "temp", Shape: []int{16, 1024}, Chunks: []int{8, 256}, DType: "<i4", Order: "C", Sep: ".",
			Value: func(i []int) float64 { return float64(i[0]*10000 + i[1]) }})
		tr, _, _ := newTestTree(t, st.Root, func(c *tree.Config) { c.AsNpy, c.Refresh = true, interval })
		dir, srv := mountServing(t, tr, false, serving, false)
		a := st.Arrays["temp"]
		held, err := os.Open(filepath.Join(dir, "temp.npy"))
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		// The first page only (no kernel readahead): chunks 0.0 to 0.3
		// are decoded and, read in part, kept by the Loader.
		if err := unix.Fadvise(int(held.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
			t.Fatal(err)
		}
		row := make([]byte, 28)
		if _, err := held.ReadAt(row, 128); err != nil || !bytes.Equal(row, a.Flat()[:28]) {
			t.Fatalf("temp.npy, row 0: %v, %v", row, err)
		}
		fi, err := held.Stat()
		if err != nil {
			t.Fatal(err)
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		grown := *a
		grown.Shape = []int{24, 1024}
		grown.Value = func(i []int) float64 { return float64(-i[0]*10000 - i[1] - 1) }
		for r := range 3 {
			for c := range 4 {
				replace(t, st.Root, "temp/"+strconv.Itoa(r)+"."+strconv.Itoa(c), testutil.ZlibBytes(t, grown.Chunk([]int{r, c})))
			}
		}
		replace(t, st.Root, "temp/.zarray", grown.Zarray(`{"id": "zlib", "level": 1}`))
		size := int64(128 + len(grown.Flat()))
		for deadline := time.Now().Add(20 * interval); ; {
			fi, err := os.Stat(filepath.Join(dir, "temp.npy"))
			if err == nil && fi.Size() == size {
				if fi.Sys().(*syscall.Stat_t).Ino == ino {
					t.Errorf("temp.npy changed, but kept its inode %d", ino)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("temp.npy not refreshed within %v: %v, %v", 20*interval, fi, err)
			}
			time.Sleep(interval / 4) // polling the mount, as a reader would
		}
		grown.CheckNpy(t, "temp.npy, grown", read(t, dir, "temp.npy"))
		old := make([]byte, 28)
		if _, err := held.ReadAt(old, 128+8192); err == nil && !bytes.Equal(old, a.Flat()[8192:8192+28]) {
			t.Errorf("temp.npy held open across the change: row 2 reads %v, not the old row", old)
		} else if err != nil && !errors.Is(err, syscall.ESTALE) {
			t.Errorf("temp.npy held open across the change: %v, want the old bytes or ESTALE", err)
		}
		if r := srv.Stats().Replaced; r < 1 {
			t.Errorf("Replaced = %d, want the .npy file", r)
		}
	})
}
