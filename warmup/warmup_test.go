package warmup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes files (path: contents) under a new directory, as a mount
// presents them.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, v := range files {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	zarray = `{"zarr_format": 2, "shape": [4, 6], "chunks": [2, 3], "dtype": "<i2", "compressor": null, "filters": null, "fill_value": 0, "order": "C"}`
	object = `{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "compressor": null, "filters": [{"id": "vlen-utf8"}], "fill_value": null, "order": "C"}`
)

// TestFind: every array under a group in chunk-grid order, but those
// passed through undecoded; a slice covers the chunks it touches.
func TestFind(t *testing.T) {
	root := tree(t, map[string]string{"g/a/.zarray": zarray, "g/s/.zarray": object, "g/.zgroup": `{"zarr_format": 2}`, "g/a/0.0": "xx"})
	arrays, err := Find(filepath.Join(root, "g"))
	if err != nil || len(arrays) != 1 {
		t.Fatalf("Find: %v, %v", arrays, err)
	}
	var got []string
	for _, f := range arrays[0].Files() {
		got = append(got, filepath.Base(f))
	}
	if want := []string{"0.0", "0.1", "1.0", "1.1"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	a, err := Slice(filepath.Join(root, "g"), "a[2:4, 0:2]")
	if err != nil || len(a.Files()) != 1 || filepath.Base(a.Files()[0]) != "1.0" {
		t.Errorf("Slice: %v, %v", a.Files(), err)
	}
	if _, err := Slice(root, "g/s[0:1]"); err == nil || !strings.Contains(err.Error(), "passed through") {
		t.Errorf("Slice of a passed-through array: %v", err)
	}
	if _, err := Find(filepath.Join(root, "g", "s")); err == nil {
		t.Error("Find found an array to warm where there is none")
	}
}

// TestWarmer: every file read whole; a missing one counted as missing, not
// failed; Resident counts the pages of what was read.
func TestWarmer(t *testing.T) {
	root := tree(t, map[string]string{"a/0": strings.Repeat("x", 3<<20), "a/1": "y"})
	files := []string{filepath.Join(root, "a/0"), filepath.Join(root, "a/1"), filepath.Join(root, "a/2")}
	w := New(files, 2)
	w.Run(context.Background())
	if w.Done() != 3 || w.Missing() != 1 || w.Bytes() != 3<<20+1 || len(w.Failed()) != 0 {
		t.Errorf("done %d, missing %d, bytes %d, failed %v", w.Done(), w.Missing(), w.Bytes(), w.Failed())
	}
	held, frac, err := Resident(files)
	if err != nil || held > 3<<20+1 || frac < 0 || frac > 1 {
		t.Errorf("Resident: %d bytes, %.2f, %v", held, frac, err)
	}
}

// TestOnMount: a path on a file system other than a zfuse mount is
// refused, saying what it is on.
func TestOnMount(t *testing.T) {
	err := OnMount(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "is not on a zfuse mount") {
		t.Errorf("OnMount(a temporary directory): %v", err)
	}
}
