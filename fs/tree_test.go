package fs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// checkZarray checks that got is want rewritten: compressor and filters
// null, every other key kept, plus any extra keys given.
func checkZarray(t *testing.T, name string, got, want []byte, extra map[string]string) {
	t.Helper()
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: presented metadata is not JSON: %v\n%s", name, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	w["compressor"], w["filters"] = json.RawMessage("null"), json.RawMessage("null")
	for k, v := range extra {
		w[k] = json.RawMessage(v)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w))) {
		t.Fatalf("%s: keys %v, want %v", name, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
	}
	for k := range w {
		var gv, wv any
		json.Unmarshal(g[k], &gv)
		json.Unmarshal(w[k], &wv)
		if gb, _ := json.Marshal(gv); !bytes.Equal(gb, testutil.Must(json.Marshal(wv))) {
			t.Errorf("%s: %q = %s, want %s", name, k, g[k], w[k])
		}
	}
}

// checkServed checks what path p serves (got) against the presented-tree
// rules, for every file of the test store.
func checkServed(t *testing.T, s *testStore, p string, got []byte) {
	t.Helper()
	raw, isChunk := s.raw[p]
	switch {
	case isChunk:
		if !bytes.Equal(got, raw) {
			t.Errorf("%s: served %d bytes %x, want the decoded chunk %x", p, len(got), got, raw)
		}
	case p == "legacy/.zarray":
		checkZarray(t, p, got, s.stored[p], map[string]string{"dimension_separator": `"/"`})
	case strings.HasSuffix(p, "/.zarray") && !strings.HasPrefix(p, "odd/") && !strings.HasPrefix(p, "bad/"):
		checkZarray(t, p, got, s.stored[p], nil)
	case p == ".zmetadata":
		var doc struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(got, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(doc.Metadata) != 11 { // every .zarray, .zgroup and .zattrs
			t.Errorf(".zmetadata has %d entries, want 11", len(doc.Metadata))
		}
		for k, v := range doc.Metadata {
			switch {
			case k == "odd/.zarray" || k == "bad/.zarray":
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(s.stored[k], &b)
				if !bytes.Equal(testutil.Must(json.Marshal(a)), testutil.Must(json.Marshal(b))) {
					t.Errorf(".zmetadata[%s] = %s, want it as stored", k, v)
				}
			case k == "legacy/.zarray": // as the array's own .zarray says, with the separator found
				checkZarray(t, ".zmetadata["+k+"]", v, s.stored[k], map[string]string{"dimension_separator": `"/"`})
			case strings.HasSuffix(k, ".zarray"):
				checkZarray(t, ".zmetadata["+k+"]", v, s.stored[k], nil)
			default:
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(s.stored[k], &b)
				if !bytes.Equal(testutil.Must(json.Marshal(a)), testutil.Must(json.Marshal(b))) {
					t.Errorf(".zmetadata[%s] = %s, want %s", k, v, s.stored[k])
				}
			}
		}
	default:
		if !bytes.Equal(got, s.stored[p]) {
			t.Errorf("%s: served %q, want it as stored %q", p, got, s.stored[p])
		}
	}
}

func TestReadFile(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	tr, logs := newTestTree(t, s)
	for p := range s.stored {
		if p == "corrupt/1" {
			continue
		}
		got, err := tr.ReadFile(ctx, p)
		if err != nil {
			t.Errorf("ReadFile(%q): %v", p, err)
			continue
		}
		checkServed(t, s, p, got)
	}
	for _, r := range []struct {
		path  string
		errno syscall.Errno
		is    error
	}{
		{"temp/1.1", syscall.ENOENT, ErrNotStored},          // missing chunk stays missing, and says so
		{"temp/9.9", syscall.ENOENT, iofs.ErrNotExist},      // outside the grid
		{"README.txt/x", syscall.ENOENT, iofs.ErrNotExist},  // below a file
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
			if e := tr.errno(ctx, "read", r.path, err); e != r.errno {
				t.Errorf("ReadFile(%q): errno %v, want %v (err %v)", r.path, e, r.errno, err)
			}
		}
	}
	// The corrupt chunk was logged with its key and reason; the rest is fine.
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "key=corrupt/1") {
		t.Errorf("no Error line naming corrupt/1 in log:\n%s", l)
	}
	if got, err := tr.ReadFile(ctx, "corrupt/0"); err != nil || !bytes.Equal(got, s.raw["corrupt/0"]) {
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
	s := newTestStore(t)
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
		for k := range s.stored {
			if strings.HasPrefix(k, in.Path+"/") && !strings.Contains(k, "/.z") {
				chunks++
				stored += int64(len(s.stored[k]))
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
		{"the test store", newTestStore(t).root, true},
	} {
		tr, _ := treeOver(t, dirStore(t, tc.root))
		if got, err := tr.HasArray(ctx); err != nil || got != tc.want {
			t.Errorf("%s: HasArray = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
