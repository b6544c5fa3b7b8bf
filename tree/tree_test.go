package tree

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// newTestTree opens s as a Tree whose log goes to the returned buffer;
// each of set may change its Config first.
func newTestTree(t testing.TB, s *testutil.V2Store, set ...func(*Config)) (*Tree, *testutil.LogBuffer) {
	return treeOver(t, dirStore(t, s.Root), set...)
}

// treeOver returns a Tree over ds whose log goes to the returned buffer,
// with the changes set makes to its Config.
func treeOver(t testing.TB, ds store.Store, set ...func(*Config)) (*Tree, *testutil.LogBuffer) {
	log, logs := testutil.Logger()
	cfg := Config{Store: ds, Log: log, Chunks: testLoader(t, ds, log)}
	for _, f := range set {
		f(&cfg)
	}
	return New(cfg), logs
}

// testLoader returns the chunk loader the tests' trees use: the real one,
// with small budgets, closed when the test ends.
func testLoader(t testing.TB, s store.Store, log *slog.Logger) *readahead.Loader {
	l := readahead.New(readahead.Config{Store: s, Log: log, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
	t.Cleanup(func() { l.Close() })
	return l
}

func TestReadFile(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, logs := newTestTree(t, s)
	for p := range s.Stored {
		if p == "corrupt/1" {
			continue
		}
		got, err := tr.ReadFile(ctx, p)
		if err != nil {
			t.Errorf("ReadFile(%q): %v", p, err)
			continue
		}
		s.CheckServed(t, p, got)
	}
	for _, r := range []struct {
		path  string
		errno syscall.Errno
		is    error
	}{
		{"temp/1.1", syscall.ENOENT, ErrNotStored},          // missing chunk stays missing, and says so
		{"temp/9.9", syscall.ENOENT, fs.ErrNotExist},        // outside the grid
		{"README.txt/x", syscall.ENOENT, fs.ErrNotExist},    // below a file
		{"../etc/passwd", syscall.EACCES, store.ErrOutside}, // outside the store
		{"/etc/passwd", syscall.EACCES, store.ErrOutside},
		{"temp/../../x", syscall.EACCES, store.ErrOutside},
		{"", syscall.EACCES, store.ErrOutside},
		{"temp", syscall.EISDIR, ErrIsDir},
		{"corrupt/1", syscall.EIO, nil},
	} {
		got, err := tr.ReadFile(ctx, r.path)
		if err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", r.path, got)
			continue
		}
		if r.is != nil && !errors.Is(err, r.is) {
			t.Errorf("ReadFile(%q) err = %v, want %v", r.path, err, r.is)
		}
		if r.is != ErrNotStored && errors.Is(err, ErrNotStored) {
			t.Errorf("ReadFile(%q) err = %v: not a chunk of the grid", r.path, err)
		}
		if r.errno != syscall.EISDIR {
			if e := tr.Errno(ctx, "read", r.path, err); e != r.errno {
				t.Errorf("ReadFile(%q): errno %v, want %v (err %v)", r.path, e, r.errno, err)
			}
		}
	}
	// The corrupt chunk was logged with its key and reason; the rest is fine.
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "key=corrupt/1") {
		t.Errorf("no Error line naming corrupt/1 in log:\n%s", l)
	}
	if got, err := tr.ReadFile(ctx, "corrupt/0"); err != nil || !bytes.Equal(got, s.Raw["corrupt/0"]) {
		t.Errorf("corrupt/0 after corrupt/1 failed: %x, %v", got, err)
	}
	// Passed-through arrays were announced once each, with the reason.
	for _, a := range []string{"odd", "bad"} {
		if n := strings.Count(logs.String(), "passed through unchanged\" key="+a+" "); n != 1 {
			t.Errorf("%d Warn lines for %s, want 1:\n%s", n, a, logs)
		}
	}
}

func TestArrays(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, _ := newTestTree(t, s)
	infos, err := tr.Arrays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, in := range infos {
		paths = append(paths, in.Path)
	}
	if want := []string{"bad", "corrupt", "group/nested", "legacy", "odd", "scalar", "temp"}; !slices.Equal(paths, want) {
		t.Fatalf("arrays %v, want %v", paths, want)
	}
	for _, in := range infos {
		var chunks, stored int64
		for k := range s.Stored {
			if strings.HasPrefix(k, in.Path+"/") && !strings.Contains(k, "/.z") {
				chunks++
				stored += int64(len(s.Stored[k]))
			}
		}
		switch in.Path {
		case "bad":
			if in.Array != nil || !errors.Is(in.PassThrough, zarr.ErrInvalid) {
				t.Errorf("bad: %+v, want invalid metadata", in)
			}
			continue
		case "odd":
			if in.PassThrough == nil {
				t.Errorf("odd: not passed through")
			}
		default:
			if in.PassThrough != nil {
				t.Errorf("%s: passed through: %v", in.Path, in.PassThrough)
			}
		}
		if in.Chunks != chunks || in.Stored != stored || in.Presented != chunks*in.Array.ChunkLen() {
			t.Errorf("%s: %d chunks, %d stored, %d presented; want %d, %d, %d",
				in.Path, in.Chunks, in.Stored, in.Presented, chunks, stored, chunks*in.Array.ChunkLen())
		}
	}
}

// TestHasArray: the tree holds an array, or does not (an empty directory,
// a group and nothing else), which zfuse info, mount and compress refuse.
func TestHasArray(t *testing.T) {
	ctx := context.Background()
	group := t.TempDir()
	testutil.WriteFile(t, group, ".zgroup", []byte(`{"zarr_format": 2}`))
	testutil.WriteFile(t, group, "notes/README.txt", []byte("not zarr"))
	for _, tc := range []struct {
		name string
		root string
		want bool
	}{
		{"empty", t.TempDir(), false},
		{"a group", group, false},
		{"the test store", testutil.NewV2Store(t).Root, true},
	} {
		tr, _ := treeOver(t, dirStore(t, tc.root))
		if got, err := tr.HasArray(ctx); err != nil || got != tc.want {
			t.Errorf("%s: HasArray = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
