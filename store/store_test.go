package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/zfuse/zfuse/store"
)

// dirStore builds a directory store with a secret file beside it (outside
// the root) and symlinks that point in and out.
func dirStore(t *testing.T) *store.DirStore {
	t.Helper()
	top := t.TempDir()
	root := filepath.Join(top, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(top, "secret"), []byte("outside"), 0o644))
	must(os.Mkdir(filepath.Join(top, "secretdir"), 0o755))
	must(os.WriteFile(filepath.Join(top, "secretdir", "x"), []byte("outside"), 0o644))
	must(os.WriteFile(filepath.Join(root, "a", ".zarray"), []byte(`{"zarr_format":2}`), 0o644))
	must(os.WriteFile(filepath.Join(root, "a", "0.0"), []byte("0123456789"), 0o644))
	must(os.WriteFile(filepath.Join(root, "a", "b", "1"), []byte("nested"), 0o644))
	must(os.WriteFile(filepath.Join(root, "empty"), nil, 0o644))
	must(os.Symlink("0.0", filepath.Join(root, "a", "link")))                  // inside
	must(os.Symlink("../../secret", filepath.Join(root, "a", "out")))          // to a file outside
	must(os.Symlink(filepath.Join(top, "secret"), filepath.Join(root, "abs"))) // absolute, outside
	must(os.Symlink("../secretdir", filepath.Join(root, "outdir")))            // to a dir outside
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	s, err := store.Dir(root)
	must(err)
	t.Cleanup(func() { s.Close() })
	return s
}

// mapStore holds the same keys as dirStore's inside part.
func mapStore() *store.FSStore {
	return store.FS(fstest.MapFS{
		"a/.zarray": {Data: []byte(`{"zarr_format":2}`)},
		"a/0.0":     {Data: []byte("0123456789")},
		"a/b/1":     {Data: []byte("nested")},
		"empty":     {Data: nil},
	})
}

// plain hides the optional interfaces of its store, to test the
// fallbacks.
type plain struct{ store.Store }

func TestReadKey(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	type row struct {
		key     string
		want    string
		wantErr error // nil: success
	}
	common := []row{
		{"a/0.0", "0123456789", nil},
		{"a/b/1", "nested", nil},
		{"empty", "", nil},
		{"a/missing", "", fs.ErrNotExist},
		{"a", "", fs.ErrNotExist}, // a directory holds no value
		{"..", "", store.ErrOutside},
		{"../secret", "", store.ErrOutside},
		{"a/../../secret", "", store.ErrOutside},
		{"a/../a/0.0", "", store.ErrOutside}, // not a clean key
		{"/etc/passwd", "", store.ErrOutside},
		{"", "", store.ErrOutside},
		{"a//0.0", "", store.ErrOutside},
		{"./a/0.0", "", store.ErrOutside},
	}
	dirOnly := []row{
		{"a/link", "0123456789", nil},
		{"a/out", "", store.ErrOutside},
		{"abs", "", store.ErrOutside},
		{"outdir/x", "", store.ErrOutside},
		{"dangling", "", fs.ErrNotExist},
	}
	stores := []struct {
		name string
		s    store.Store
		rows []row
	}{
		{"dir", ds, append(common, dirOnly...)},
		{"map", mapStore(), common},
		{"fallback", plain{ds}, append(common, dirOnly...)},
	}
	for _, st := range stores {
		for _, r := range st.rows {
			t.Run(st.name+"/"+r.key, func(t *testing.T) {
				got, err := st.s.ReadKey(ctx, r.key)
				if r.wantErr != nil {
					if !errors.Is(err, r.wantErr) {
						t.Fatalf("ReadKey(%q) = %q, %v; want error %v", r.key, got, err, r.wantErr)
					}
					if bytes.Contains(got, []byte("outside")) {
						t.Fatalf("leaked bytes from outside the root")
					}
					return
				}
				if err != nil || string(got) != r.want {
					t.Fatalf("ReadKey(%q) = %q, %v; want %q", r.key, got, err, r.want)
				}
				// The caller owns the slice: scribbling on it changes nothing.
				for i := range got {
					got[i] = 'X'
				}
				again, _ := st.s.ReadKey(ctx, r.key)
				if string(again) != r.want {
					t.Fatalf("second read %q: the store kept a reference", again)
				}
			})
		}
	}
}

func TestReadKeyRange(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	rows := []struct {
		key     string
		off, n  int64
		want    string
		wantErr error
	}{
		{"a/0.0", 0, 4, "0123", nil},
		{"a/0.0", 3, 4, "3456", nil},
		{"a/0.0", 8, 100, "89", nil},
		{"a/0.0", 10, 5, "", nil},
		{"a/0.0", 50, 5, "", nil},
		{"a/0.0", 0, 0, "", nil},
		{"empty", 0, 10, "", nil},
		{"a/link", 1, 2, "12", nil},
		{"a/missing", 0, 1, "", fs.ErrNotExist},
		{"a/out", 0, 1, "", store.ErrOutside},
		{"../secret", 0, 1, "", store.ErrOutside},
	}
	for _, s := range []struct {
		name string
		s    store.Store
	}{{"dir", ds}} {
		for _, r := range rows {
			got, err := s.s.ReadKeyRange(ctx, r.key, r.off, r.n)
			if r.wantErr != nil {
				if !errors.Is(err, r.wantErr) {
					t.Errorf("%s: ReadKeyRange(%q, %d, %d) = %q, %v; want %v", s.name, r.key, r.off, r.n, got, err, r.wantErr)
				}
				continue
			}
			if err != nil || string(got) != r.want {
				t.Errorf("%s: ReadKeyRange(%q, %d, %d) = %q, %v; want %q", s.name, r.key, r.off, r.n, got, err, r.want)
			}
		}
	}
	if _, err := ds.ReadKeyRange(ctx, "a/0.0", -1, 2); err == nil {
		t.Errorf("negative offset accepted")
	}
}

// TestReadInto: a BufferReader reads into the caller's memory, whole
// values and ranges, with the same answers as ReadKey and ReadRange, and
// a store that is not one still answers through ReadInto.
func TestReadInto(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	mapStore := store.FS(fstest.MapFS{
		"a/0.0": {Data: []byte("0123456789")}, "a/b/1": {Data: []byte("nested")}, "empty": {},
	})
	rows := []struct {
		key     string
		off, n  int64
		want    string
		wantErr error
	}{
		{"a/0.0", 0, -1, "0123456789", nil},
		{"a/0.0", 3, 4, "3456", nil},
		{"a/0.0", 8, 100, "89", nil},
		{"a/0.0", 10, 5, "", nil},
		{"empty", 0, -1, "", nil},
		{"a/b/1", 0, -1, "nested", nil},
		{"a/missing", 0, -1, "", fs.ErrNotExist},
		{"a/out", 0, -1, "", store.ErrOutside},
		{"a/out", 0, 1, "", store.ErrOutside},
	}
	for _, s := range []struct {
		name   string
		s      store.Store
		intoMe bool // reads into the buffer given
	}{{"dir", ds, true}, {"mapfs", mapStore, true}, {"fallback", plain{ds}, false}} {
		for _, r := range rows {
			if s.s == mapStore && r.key == "a/out" {
				continue // no symlinks in a MapFS
			}
			buf := make([]byte, 64)
			asked := -1
			got, err := store.ReadInto(ctx, s.s, r.key, r.off, r.n, func(n int) []byte { asked = n; return buf[:0:max(n, 1)] })
			if r.wantErr != nil {
				if !errors.Is(err, r.wantErr) {
					t.Errorf("%s: ReadInto(%q, %d, %d) = %q, %v; want %v", s.name, r.key, r.off, r.n, got, err, r.wantErr)
				}
				continue
			}
			if err != nil || string(got) != r.want {
				t.Errorf("%s: ReadInto(%q, %d, %d) = %q, %v; want %q", s.name, r.key, r.off, r.n, got, err, r.want)
				continue
			}
			if len(got) == 0 {
				continue
			}
			if in := &got[0] == &buf[0]; in != s.intoMe {
				t.Errorf("%s: ReadInto(%q, %d, %d): read into the buffer given: %v (asked for %d bytes), want %v", s.name, r.key, r.off, r.n, in, asked, s.intoMe)
			}
		}
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	wantA := []store.Entry{
		{Name: ".zarray", Size: 17},
		{Name: "0.0", Size: 10},
		{Name: "b", Dir: true},
		{Name: "link", Size: 10}, // resolved; "out" points outside and is left out
	}
	for _, s := range []struct {
		name string
		s    store.Store
		want []store.Entry
	}{
		{"dir", ds, wantA},
		{"map", mapStore(), wantA[:3]},
	} {
		got, err := s.s.List(ctx, "a")
		got = noVersions(got)
		if err != nil || !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: List(a) = %+v, %v; want %+v", s.name, got, err, s.want)
		}
	}
	root, err := ds.List(ctx, ".")
	root = noVersions(root)
	want := []store.Entry{{Name: "a", Dir: true}, {Name: "empty"}} // abs, outdir, dangling left out
	if err != nil || !reflect.DeepEqual(root, want) {
		t.Errorf("List(.) = %+v, %v; want %+v", root, err, want)
	}
	for _, dir := range []string{"..", "outdir", "../secretdir", "/"} {
		if es, err := ds.List(ctx, dir); err == nil {
			t.Errorf("List(%q) = %+v: listed outside the root", dir, es)
		}
	}
	if _, err := ds.List(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List(nope) err = %v, want ErrNotExist", err)
	}
}

func TestStat(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	rows := []struct {
		name    string
		want    store.Entry
		wantErr error
	}{
		{".", store.Entry{Name: ".", Dir: true}, nil},
		{"a", store.Entry{Name: "a", Dir: true}, nil},
		{"a/0.0", store.Entry{Name: "0.0", Size: 10}, nil},
		{"a/b/1", store.Entry{Name: "1", Size: 6}, nil},
		{"a/link", store.Entry{Name: "link", Size: 10}, nil},
		{"a/nope", store.Entry{}, fs.ErrNotExist},
		{"a/out", store.Entry{}, store.ErrOutside},
		{"outdir", store.Entry{}, store.ErrOutside},
		{"../secret", store.Entry{}, store.ErrOutside},
	}
	for _, s := range []struct {
		name string
		s    store.Store
	}{{"dir", ds}} {
		for _, r := range rows {
			got, err := s.s.Stat(ctx, r.name)
			got.Version = "" // TestVersion
			if r.wantErr != nil {
				if !errors.Is(err, r.wantErr) {
					t.Errorf("%s: Stat(%q) = %+v, %v; want %v", s.name, r.name, got, err, r.wantErr)
				}
				continue
			}
			if err != nil || got != r.want {
				t.Errorf("%s: Stat(%q) = %+v, %v; want %+v", s.name, r.name, got, err, r.want)
			}
		}
	}
}

// noVersions clears the Version of each entry: TestVersion checks them.
func noVersions(es []store.Entry) []store.Entry {
	for i := range es {
		es[i].Version = ""
	}
	return es
}

// TestVersion: a local file's version changes when it is rewritten or
// replaced (zarr-python renames a new file into place), and is the same in
// a listing and a Stat; directories have none.
func TestVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ds, err := store.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	p := filepath.Join(dir, "0.0")
	stat := func() store.Entry {
		t.Helper()
		e, err := ds.Stat(ctx, "0.0")
		if err != nil {
			t.Fatal(err)
		}
		es, err := ds.List(ctx, ".")
		if err != nil || len(es) != 1 || es[0] != e {
			t.Fatalf("List = %+v, %v; Stat = %+v", es, err, e)
		}
		return e
	}
	then := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for i, tc := range []struct {
		name  string
		write func() error
		same  bool // the version stays that of the row before
	}{
		{"written", func() error { return os.WriteFile(p, []byte("old"), 0o644) }, false},
		{"untouched", func() error { return nil }, true},
		{"rewritten in place, same size", func() error {
			if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
				return err
			}
			return os.Chtimes(p, then, then)
		}, false},
		{"replaced by rename", func() error {
			tmp := filepath.Join(dir, ".tmp")
			if err := os.WriteFile(tmp, []byte("newer"), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(tmp, then.Add(time.Second), then.Add(time.Second)); err != nil {
				return err
			}
			return os.Rename(tmp, p)
		}, false},
	} {
		var before store.Entry
		if i > 0 {
			before = stat()
		}
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
		e := stat()
		if e.Version == "" {
			t.Errorf("%s: no version", tc.name)
		}
		if i > 0 && (e.Version == before.Version) != tc.same {
			t.Errorf("%s: version %q, before %q; want the same: %v", tc.name, e.Version, before.Version, tc.same)
		}
	}
	if e, err := ds.Stat(ctx, "."); err != nil || e.Version != "" {
		t.Errorf("Stat(.) = %+v, %v; want no version", e, err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dirStore(t).ReadKey(ctx, "a/0.0"); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadKey with a canceled ctx: err = %v", err)
	}
}

func TestDirMissing(t *testing.T) {
	if _, err := store.Dir(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Dir(missing) err = %v", err)
	}
}

// TestDirHook: a DirStore tells its hook of every call, each a request of
// the file system: its op, its key, the bytes it returned and its error.
func TestDirHook(t *testing.T) {
	ctx := context.Background()
	ds := dirStore(t)
	var got []string
	ds.SetHook(func(op, key string, n int64, d time.Duration, err error) {
		if d < 0 {
			t.Errorf("%s %s took %v", op, key, d)
		}
		got = append(got, fmt.Sprintf("%s %s %d %v", op, key, n, errors.Is(err, fs.ErrNotExist)))
	})
	ds.ReadKey(ctx, "a/0.0")
	ds.ReadKeyRange(ctx, "a/0.0", 2, 3)
	store.ReadInto(ctx, ds, "nope", 0, -1, func(n int) []byte { return make([]byte, n) })
	ds.Stat(ctx, "a")
	ds.List(ctx, "a")
	if f, err := ds.OpenKey(ctx, "a/0.0"); err == nil {
		f.Close()
	}
	want := []string{"read a/0.0 10 false", "read_range a/0.0 3 false", "read nope 0 true", "stat a 0 false", "list a 0 false", "open a/0.0 0 false"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the hook was told %q, want %q", got, want)
	}
}
