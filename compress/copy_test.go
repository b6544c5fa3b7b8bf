package compress

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/zarr"
)

// TestUnits: every chunk is in exactly one unit, in C order; a sharded
// array's units are its shards, with the inner chunks outside the array
// left out.
func TestUnits(t *testing.T) {
	for _, tg := range []zarr.Target{
		{Format: 2, Chunks: []int{3, 4}},
		{Format: 3, Chunks: []int{3, 4}, Shard: []int{2, 2}},
	} {
		src := map[string][]byte{zarr.ArrayFile: []byte(`{"zarr_format":2,"shape":[10,9],"chunks":[3,4],"dtype":"<i2","compressor":null,"filters":null,"fill_value":0,"order":"C"}`)}
		a, _ := zarr.ParseV2(src[zarr.ArrayFile])
		files, err := zarr.StoreArray(src, a, tg)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := zarr.NewEncoding(files)
		if err != nil {
			t.Fatal(err)
		}
		d := enc.Array()
		n, at := units(d, share{0, objects(d)})
		seen := map[int64]int{}
		for i := range n {
			for _, c := range at(i).coords {
				if c != nil {
					seen[d.Linear(c)]++
				}
			}
		}
		if int64(len(seen)) != d.NumChunks() {
			t.Errorf("format %d: %d chunks in units, want %d", tg.Format, len(seen), d.NumChunks())
		}
		for k, v := range seen {
			if v != 1 {
				t.Errorf("format %d: chunk %d in %d units", tg.Format, k, v)
			}
		}
	}
}

// TestCheckDestScheme: a DEST URL other than s3:// is refused (the rest
// of checkDest is compress.CheckDest's, tested there).
// TestCheckHolds: what DEST holds decides whether a run, a part or
// --finish may write into it.
func TestCheckHolds(t *testing.T) {
	empty := &DestState{Parts: map[int]*Record{}}
	garbage := &DestState{Names: []string{"notes.txt"}, Parts: map[int]*Record{}}
	store := &DestState{Names: []string{".zgroup", "a"}, Store: true, Parts: map[int]*Record{}}
	run := &DestState{Names: []string{RunFile, "a"}, Run: &Record{}, Parts: map[int]*Record{}}
	parts := &DestState{Names: []string{partFile(Part{1, 4}), "a"}, N: 4, Parts: map[int]*Record{1: {}}}
	one, p1, p2 := Part{}, Part{1, 4}, Part{2, 4}
	tests := []struct {
		name           string
		st             *DestState
		prt            Part
		finish, resume bool
		err            string // "" for none; "finished" for ErrFinished
	}{
		{"empty", empty, one, false, false, ""},
		{"not empty", garbage, one, false, false, "not empty"},
		{"resume into no store", garbage, one, false, true, "neither"},
		{"resume a run", run, one, false, true, ""},
		{"a run, no resume", run, one, false, false, "not empty"},
		{"resume a store", store, one, false, true, ""},
		{"a run into parts", parts, one, false, true, "--part K/4"},
		{"a part into an empty DEST", empty, p2, false, false, ""},
		{"a part beside the others", parts, p2, false, false, ""},
		{"a part again", parts, p1, false, false, "add --resume"},
		{"a part resumed", parts, p1, false, true, ""},
		{"a part of another N", parts, Part{1, 3}, false, true, "same N"},
		{"a part into a run", run, p2, false, true, "without --part"},
		{"a part into garbage", garbage, p2, false, false, "not empty"},
		{"finish", parts, one, true, false, ""},
		{"finish nothing", empty, one, true, false, "no part"},
		{"finish a run", run, one, true, false, "without --finish"},
		{"finish a finished store", store, one, true, false, "finished"},
	}
	for _, tt := range tests {
		err := CheckHolds("DEST", tt.st, tt.prt, tt.finish, tt.resume)
		switch {
		case tt.err == "finished":
			if !errors.Is(err, ErrFinished) {
				t.Errorf("%s: %v, want ErrFinished", tt.name, err)
			}
		case (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
	}
}

// TestDirDestClean: Clean removes the temporaries of the keys it is told
// are its own, and no value, and no one else's temporary.
func TestDirDestClean(t *testing.T) {
	root := t.TempDir()
	d := &dirDest{root: root}
	ctx := context.Background()
	for _, k := range []string{"a/0.0", "a/0.1", "b/c/0"} {
		if err := d.WriteKey(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tmp := range []string{"a/.0.0.zfuse-tmp", "a/.1.1.zfuse-tmp", "b/c/.0.zfuse-tmp"} {
		os.WriteFile(filepath.Join(root, tmp), []byte("half"), 0o644)
	}
	var walked []string
	d.Walk(ctx, "a", func(k string, n int64) error { walked = append(walked, k); return nil })
	if !slices.Equal(walked, []string{"a/0.0", "a/0.1"}) {
		t.Errorf("Walk(a) = %v: temporaries are no keys", walked)
	}
	if err := d.Clean(ctx, func(k string) bool { return strings.HasPrefix(k, "a/") }); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(files(t, root)))
	want := []string{"a/0.0", "a/0.1", "b/c/.0.zfuse-tmp", "b/c/0"}
	if !slices.Equal(got, want) {
		t.Errorf("after Clean: %v, want %v", got, want)
	}
}

// files reads every file under dir, by path relative to it.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[rel] = string(b)
		}
		return err
	})
	return out
}
