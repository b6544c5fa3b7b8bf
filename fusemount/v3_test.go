package fusemount

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// presented returns every file the tree should present of s, with its
// bytes (nil for files whose reads fail).
func presented(s *testutil.V3Store, asV2 bool) map[string][]byte {
	out := map[string][]byte{}
	for dir, doc := range s.Meta {
		prefix := ""
		if dir != "." {
			prefix = dir + "/"
		}
		if dir == "strings" {
			if !asV2 {
				out["strings/zarr.json"], out["strings/c/0"] = doc, []byte("opaque vlen bytes")
			}
			continue
		}
		if !asV2 {
			out[prefix+"zarr.json"] = testutil.Must(zarr.RewriteV3(doc, nil))
			continue
		}
		for name, b := range testutil.Must(zarr.V2Files(doc, nil)) {
			out[prefix+name] = b
		}
	}
	for _, a := range s.Arrays {
		raw := s.Raw[a.Path]
		if asV2 {
			raw = s.Raw2[a.Path]
		}
		for k, b := range raw {
			out[a.Path+"/"+k] = b
		}
		for k := range s.Raw[a.Path] {
			if s.Bad[a.Path+"/"+k] {
				v2 := k
				if asV2 {
					v2 = strings.TrimPrefix(strings.TrimPrefix(k, "c"), a.Sep)
				}
				out[a.Path+"/"+v2] = nil
			}
		}
	}
	return out
}

// TestV3Mount mounts the v3 test store as v3 and as v2 and checks that the
// mount lists exactly the presented files, that stat gives their sizes,
// that each reads its decoded chunk (or rewritten metadata) and the same
// through zfuse cat, that absent chunks are ENOENT, and that a shard whose
// index is corrupt fails with EIO on its chunks only.
func TestV3Mount(t *testing.T) {
	s := testutil.NewV3Store(t)
	for _, asV2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v3", true: "as-v2"}[asV2], func(t *testing.T) {
			tr, _, logs := newTestTree(t, s.Root, func(c *tree.Config) { c.AsV2 = asV2 })
			mnt := mountTree(t, tr, false)
			ctx := context.Background()
			want := presented(s, asV2)
			var seen []string
			err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				seen = append(seen, filepath.ToSlash(testutil.Must(filepath.Rel(mnt, p))))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if w := slices.Sorted(maps.Keys(want)); !slices.Equal(seen, w) {
				t.Fatalf("mount lists\n%v\nwant\n%v", seen, w)
			}
			for _, rel := range seen {
				fi, err := os.Stat(filepath.Join(mnt, rel))
				if err != nil {
					t.Errorf("stat %s: %v", rel, err)
					continue
				}
				got, err := os.ReadFile(filepath.Join(mnt, rel))
				if want[rel] == nil {
					if !errors.Is(err, syscall.EIO) {
						t.Errorf("%s: read %d bytes, %v; want EIO (its shard index is corrupt)", rel, len(got), err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, want[rel]) {
					t.Errorf("%s: %v: read %x\nwant %x", rel, err, got, want[rel])
				}
				if fi.Size() != int64(len(want[rel])) {
					t.Errorf("%s: stat says %d bytes, want %d", rel, fi.Size(), len(want[rel]))
				}
				if cat, err := tr.ReadFile(ctx, rel); err != nil || !bytes.Equal(cat, got) {
					t.Errorf("%s: ReadFile (zfuse cat) differs from the mount: %v", rel, err)
				}
			}
			if !strings.Contains(logs.String(), "sharded/corrupt/c/1") || !strings.Contains(logs.String(), "checksum") {
				t.Errorf("no log line names the corrupt shard and why:\n%s", logs)
			}
			absent := []string{"plain/c/1/1", "plain/c/3/0", "sharded/end/c/0/0", "sharded/end/c/2/2", "sharded/end/c/5/0",
				"sharded/end/c/0/4", "sharded/start/c.1", "sharded/start/c.5", "sharded/deep/1/1/0", "dots/1", "dots/3", "sharded/whole/c/0/1"}
			if asV2 {
				absent = []string{"plain/1/1", "plain/c/0/0", "zarr.json", "plain/zarr.json", "sharded/end/0/0", "sharded/end/5/0",
					"sharded/start/1", "sharded/start/c.0", "sharded/deep/1/1/0", "dots/1", "strings", "strings/zarr.json",
					"sharded/whole/0/1"}
			}
			for _, rel := range absent {
				if _, err := os.Stat(filepath.Join(mnt, rel)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %v, want ENOENT", rel, err)
				}
				if _, err := tr.ReadFile(ctx, rel); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("ReadFile(%s): %v, want fs.ErrNotExist", rel, err)
				}
			}
			// Chunks of the grid that are not stored (an absent value, an
			// empty index entry) say so to zfuse cat.
			notStored := []string{"plain/c/1/1", "sharded/end/c/0/0", "dots/1"}
			if asV2 {
				notStored = []string{"plain/1/1", "sharded/end/0/0", "dots/1"}
			}
			for _, rel := range notStored {
				if _, err := tr.ReadFile(ctx, rel); !errors.Is(err, tree.ErrNotStored) {
					t.Errorf("ReadFile(%s): %v, want tree.ErrNotStored", rel, err)
				}
			}
		})
	}
}

// TestV3StatNeverDecodes lists and stats every file of a fresh v3 mount,
// as ls -lR does: nothing is decoded (shard indexes are read, not decoded).
func TestV3StatNeverDecodes(t *testing.T) {
	s := testutil.NewV3Store(t)
	tr, loader, _ := newTestTree(t, s.Root)
	mnt := mountTree(t, tr, false)
	checkStatNeverDecodes(t, loader, mnt)
}
