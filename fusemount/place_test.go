package fusemount

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// TestPush: on the page-cache serving paths, a sequential reader reads
// most chunks from pages pushed before it asked (no READ reaches the mount
// for them), byte for byte the chunks: of an array it listed (the kernel
// knows every file), and of one it did not list, whose files the mount
// looks up itself; where it cannot (a /dev/fd/N mountpoint), the pushes
// are refused, and every chunk is read through a READ as before. Under
// passthrough nothing is pushed.
func TestPush(t *testing.T) {
	servings(t, func(t *testing.T, serving Serving) {
		for _, tt := range []struct {
			name                string
			listed, noIntroduce bool
		}{{"listed", true, false}, {"unlisted", false, false}, {"unlisted, no lookups", false, true}} {
			t.Run(tt.name, func(t *testing.T) {
				listed := tt.listed
				const n = 96
				s := testutil.EmptyV2Store(t)
				s.Add(t, testutil.V2Array{Path: "a", Shape: []int{n * 256}, Chunks: []int{256}, DType: "<f8", Order: "C", Sep: ".",
					Value: func(i []int) float64 { return float64(i[0]) * 1.5 }})
				ds, err := store.Dir(s.Root)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ds.Close() })
				loader := testLoader(t, ds, nil)
				var own atomic.Int64 // LOOKUPs from this process: the test's reads, never the mount's own
				self := uint32(os.Getpid())
				onLookup := func(pid uint32) {
					if pid == self {
						own.Add(1)
					}
				}
				mnt, srv := mountWith(t, tree.New(tree.Config{Store: ds, Chunks: loader}), Config{Serving: serving, noIntroduce: tt.noIntroduce, onLookup: onLookup})
				if listed {
					if es, err := os.ReadDir(filepath.Join(mnt, "a")); err != nil || len(es) != n+1 {
						t.Fatalf("listing: %d entries, %v", len(es), err)
					}
				}
				for i := range n {
					// A reader that works on each chunk before the next
					// (zarr-python decodes and copies it; 2 ms here): a
					// reader of 2 KiB chunks that does nothing else reads
					// faster than the mount looks unlisted files up, and
					// its chunks are read through READs from staging,
					// decoded all the same, but not pushed.
					time.Sleep(2 * time.Millisecond)
					key := "a/" + strconv.Itoa(i)
					got, err := os.ReadFile(filepath.Join(mnt, key))
					if err != nil || !bytes.Equal(got, s.Raw[key]) {
						t.Fatalf("%s: %d bytes, %v; want the chunk's %d", key, len(got), err, len(s.Raw[key]))
					}
				}
				ss, ls := srv.Stats(), loader.Stats()
				t.Logf("serve %+v; loader %v", ss, ls)
				switch {
				case serving == Passthrough:
					if ss.Pushed != 0 || ls.Placed != 0 {
						t.Errorf("passthrough pushed %d chunks", ss.Pushed)
					}
				case !tt.noIntroduce:
					if ss.Pushed < n/2 || ss.ChunkReads > n/2 || ls.Placed < n/2 {
						t.Errorf("pushed %d, placed %d, %d chunk READs of %d chunks: want most pushed, few READs", ss.Pushed, ls.Placed, ss.ChunkReads, n)
					}
					if listed && ss.Introduced != 0 || !listed && ss.Introduced < n/2 {
						t.Errorf("%d files looked up by the mount itself, listed %v", ss.Introduced, listed)
					}
					// The mount's lookups come from its child (looker): a
					// thread of the server inside its own mount would make
					// it unkillable.
					if !listed && own.Load() > n/2 {
						t.Errorf("%d LOOKUPs from the serving process itself, %d introduced: the mount looked files up from its own threads", own.Load(), ss.Introduced)
					}
				default:
					if ss.Pushed > 2 || ls.PlaceRefused == 0 || ss.ChunkReads < n-2 {
						t.Errorf("pushed %d, refused %d, %d chunk READs: want nothing pushed, every chunk read", ss.Pushed, ls.PlaceRefused, ss.ChunkReads)
					}
				}
			})
		}
	})
}

// TestPassthroughMapRecycled: under passthrough a chunk file's memory map
// outlives its open and its place in the decoded tier; the files of
// chunks let go are used again for others, but never the mapped one,
// whose bytes stay the chunk's.
func TestPassthroughMapRecycled(t *testing.T) {
	testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
	const n = 40 // chunks of 64 KiB: 2.5 MiB, over the tests' 1 MiB decoded tier
	s := testutil.EmptyV2Store(t)
	s.Add(t, testutil.V2Array{Path: "a", Shape: []int{n * 8192}, Chunks: []int{8192}, DType: "<f8", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]) * 0.25 }})
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	loader := testLoader(t, ds, nil)
	mnt, _ := mountServing(t, tree.New(tree.Config{Store: ds, Chunks: loader}), false, Passthrough, false)
	f, err := os.Open(filepath.Join(mnt, "a/0"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, 1<<16, unix.PROT_READ, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	for pass := range 2 {
		for i := 1; i < n; i++ {
			key := "a/" + strconv.Itoa(i)
			if got, err := os.ReadFile(filepath.Join(mnt, key)); err != nil || !bytes.Equal(got, s.Raw[key]) {
				t.Fatalf("pass %d, %s: %d bytes, %v", pass, key, len(got), err)
			}
		}
	}
	st := loader.Stats()
	t.Logf("%v; memfds reused %d, busy %d", st, st.MemfdsReused, st.MemfdsBusy)
	if !bytes.Equal(m, s.Raw["a/0"]) {
		t.Errorf("the map of chunk 0 changed: its file was used for another chunk")
	}
	if st.MemfdsReused == 0 || st.MemfdsBusy == 0 {
		t.Errorf("memfds reused %d, busy %d: want files used again, and the mapped one not", st.MemfdsReused, st.MemfdsBusy)
	}
}

// TestPassthroughDirectRelease: under passthrough, the RELEASE of an
// O_DIRECT open (which the kernel does not pass through) never takes the
// backing file of a passthrough open of the same file from under it.
// go-fuse 2.12 counts the backing files of an inode's opens, and counted
// the O_DIRECT open's RELEASE too: the next open, racing it, failed with
// EIO now and then.
func TestPassthroughDirectRelease(t *testing.T) {
	testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
	s := testutil.NewV2Store(t)
	tr, _, _ := newTestTree(t, s.Root)
	mnt, _ := mountServing(t, tr, false, Passthrough, false)
	p := filepath.Join(mnt, "temp/0.1")
	want := s.Raw["temp/0.1"]
	for i := range 300 {
		d, err := os.OpenFile(p, os.O_RDONLY|unix.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- d.Close() }()
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: a buffered read beside an O_DIRECT close: %d bytes, %v", i, len(got), err)
		}
		<-done
	}
}

// TestPlacerDirsRefresh: under tree.Config.Refresh every metadata read of an
// array directory is a new *zarr.Array (here rewritten a thousand times,
// with the same shape and new ones). The placer's table of array
// directories keeps one entry for the directory, for the array it serves
// now, and none once the kernel forgets it.
func TestPlacerDirsRefresh(t *testing.T) {
	st := testutil.NewV2Store(t)
	tr, _, _ := newTestTree(t, st.Root, func(c *tree.Config) { c.Refresh = time.Nanosecond }) // every lookup reads metadata again
	ctx := context.Background()
	root, err := tr.Root(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tr.Child(ctx, root, "temp")
	if err != nil {
		t.Fatal(err)
	}
	m := &mount{}
	m.place.setDir(nil, n) // as mount.inode does for the directory's inode
	d := newDirNode(tr, n, m)
	dirs := func() map[*zarr.Array]*tree.Node {
		m.place.mu.Lock()
		defer m.place.mu.Unlock()
		return maps.Clone(m.place.dirs)
	}
	arrays := map[*zarr.Array]bool{}
	for i := range 1000 {
		x := *st.Arrays["temp"]
		if i%2 == 1 {
			x.Shape = []int{6 + i%9, 7} // a new shape
		}
		replace(t, st.Root, "temp/.zarray", x.Zarray(`{"id": "zlib", "level": 1}`))
		cur, err := d.node(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a := cur.Array()
		arrays[a] = true
		if got := dirs(); len(got) != 1 || got[a] == nil || got[a].Path() != "temp" {
			t.Fatalf("after %d metadata reads: the placer's directories are %v; want temp's, for the array it serves now", i+1, got)
		}
	}
	if len(arrays) < 1000 {
		t.Fatalf("%d arrays for 1000 metadata reads: was the metadata read again?", len(arrays))
	}
	d.OnForget()
	if got := dirs(); len(got) != 0 {
		t.Errorf("the kernel forgot the directory; the placer still has %v", got)
	}
}
