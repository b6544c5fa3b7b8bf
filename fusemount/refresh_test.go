package fusemount

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/tree"
)

// TestRefreshMount mounts a Tree with and without tree.Config.Refresh, then
// replaces a chunk (as zarr-python does: a new file renamed into place)
// and grows the array (a new .zarray and a new chunk file). With Refresh,
// every read of the chunk file gives the whole old or the whole new chunk,
// and soon the new one, the new .zarray and the new chunk file, each
// changed file under a new inode; without it, the mount serves the
// metadata it served first, and the chunk whole, as first served or, once
// the kernel has let its pages go (reclaim), as stored now.
func TestRefreshMount(t *testing.T) {
	const interval = 200 * time.Millisecond
	servings(t, func(t *testing.T, s Serving) {
		for _, tc := range []struct {
			name    string
			refresh time.Duration
		}{{"refresh", interval}, {"immutable", 0}} {
			t.Run(tc.name, func(t *testing.T) {
				st := testutil.NewV2Store(t)
				tr, _, _ := newTestTree(t, st.Root, func(c *tree.Config) { c.Refresh = tc.refresh })
				dir, srv := mountServing(t, tr, false, s, false)
				a := testutil.V2Array{Path: "temp", Shape: []int{5, 7}, Chunks: []int{2, 3}, DType: "<i4", Order: "C", Sep: ".",
					Value: func(i []int) float64 { return float64(i[0]*100 + i[1] + 1) }}
				oldChunk, oldMeta := st.Raw["temp/0.0"], read(t, dir, "temp/.zarray")
				if !bytes.Equal(read(t, dir, "temp/0.0"), oldChunk) {
					t.Fatal("temp/0.0: not the chunk as written")
				}
				if _, err := os.Stat(filepath.Join(dir, "temp/3.0")); !os.IsNotExist(err) {
					t.Fatalf("temp/3.0 before it is written: %v", err)
				}
				var ino uint64
				if fi, err := os.Stat(filepath.Join(dir, "temp/0.0")); err == nil {
					ino = fi.Sys().(*syscall.Stat_t).Ino
				}
				// A reader that holds the chunk file open across the change.
				held, err := os.Open(filepath.Join(dir, "temp/0.0"))
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()

				// Rewrite chunk 0.0 and grow the array to 7 rows: chunk 3.0 is new.
				grown := a
				grown.Shape = []int{7, 7}
				grown.Value = func(i []int) float64 { return float64(-i[0]*100 - i[1] - 1) }
				newChunk := grown.Chunk([]int{0, 0})
				replace(t, st.Root, "temp/0.0", testutil.ZlibBytes(t, newChunk))
				replace(t, st.Root, "temp/3.0", testutil.ZlibBytes(t, grown.Chunk([]int{3, 0})))
				replace(t, st.Root, "temp/.zarray", grown.Zarray(`{"id": "zlib", "level": 1}`))

				bound := 20 * interval // a few intervals, on a loaded machine
				if tc.refresh == 0 {
					bound = 5 * interval
				}
				deadline := time.Now().Add(bound)
				for {
					got := read(t, dir, "temp/0.0")
					switch {
					case bytes.Equal(got, newChunk):
					case bytes.Equal(got, oldChunk):
					default:
						t.Fatalf("temp/0.0: %d bytes, neither the old chunk nor the new one", len(got))
					}
					_, err3 := os.Stat(filepath.Join(dir, "temp/3.0"))
					meta := read(t, dir, "temp/.zarray")
					fresh := bytes.Equal(got, newChunk) && err3 == nil && !bytes.Equal(meta, oldMeta)
					if tc.refresh == 0 {
						if bytes.Equal(got, newChunk) {
							t.Log("temp/0.0 served as stored now: the kernel had let its pages go")
						}
						if err3 == nil || !bytes.Equal(meta, oldMeta) {
							t.Fatalf("immutable mount changed: new chunk %v, 3.0: %v, new .zarray %v", bytes.Equal(got, newChunk), err3, !bytes.Equal(meta, oldMeta))
						}
					}
					if fresh {
						break
					}
					if time.Now().After(deadline) {
						if tc.refresh == 0 {
							return // served as first read throughout
						}
						t.Fatalf("not refreshed within %v: new chunk %v, 3.0: %v, new .zarray %v", bound, bytes.Equal(got, newChunk), err3, !bytes.Equal(meta, oldMeta))
					}
					time.Sleep(interval / 4) // polling the mount, as a reader would
				}
				// The file held open is the old version: its bytes, or ESTALE
				// once they have left the kernel's cache, never the new ones.
				got := make([]byte, len(oldChunk))
				if n, err := held.ReadAt(got, 0); err == nil || n == len(got) {
					if !bytes.Equal(got, oldChunk) {
						t.Errorf("temp/0.0 held open across the change: read %d bytes, not the old chunk", n)
					}
				} else if !errors.Is(err, syscall.ESTALE) {
					t.Errorf("temp/0.0 held open across the change: %v, want the old chunk or ESTALE", err)
				}
				if !bytes.Equal(read(t, dir, "temp/3.0"), grown.Chunk([]int{3, 0})) {
					t.Error("temp/3.0: not the new chunk")
				}
				if fi, err := os.Stat(filepath.Join(dir, "temp/0.0")); err != nil || fi.Sys().(*syscall.Stat_t).Ino == ino {
					t.Errorf("temp/0.0 changed, but kept its inode %d", ino)
				}
				if r := srv.Stats().Replaced; r < 2 {
					t.Errorf("Replaced = %d, want at least 2 (the chunk and .zarray)", r)
				}
			})
		}
	})
}

// read reads the file p under dir.
func read(t *testing.T, dir, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replace writes key under root as zarr-python does: a new file, renamed
// into place (with a new modification time).
func replace(t *testing.T, root, key string, b []byte) {
	t.Helper()
	p := filepath.Join(root, key)
	tmp := p + ".partial"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}
