package testutil

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestV3EncoderZarrita has zarrita (npm zarrita@0.7.5, an independent v3
// reader) read the test encoder's arrays, so that the mount tests rest on
// stores another implementation reads the same way. zarrita 0.7.5 reads
// shard indexes only at the end and ignores codecs after sharding_indexed
// (sharded/start and sharded/whole are left out), and does not verify the
// index crc32c (so sharded/corrupt reads as written).
func TestV3EncoderZarrita(t *testing.T) {
	script := Must(os.ReadFile(filepath.Join(Must(Repo()), "integration", "testdata", "zarrita", "read.mjs")))
	s := NewV3Store(t)
	want := map[string][]float64{}
	var paths []string
	for _, a := range s.Arrays {
		if a.Start || a.OuterCRC {
			continue
		}
		_, want[a.Path] = a.values()
		paths = append(paths, a.Path)
	}
	out := Node(t, "read.mjs", script, append([]string{s.Root}, paths...)...)
	got := 0
	for line := range bytes.Lines(out) {
		var r struct {
			Path, Error string
			Shape       []int
			Data        []float64
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("read.mjs printed %q: %v", line, err)
		}
		switch {
		case r.Error != "":
			t.Errorf("zarrita reading %s: %s", r.Path, r.Error)
		case !slices.Equal(r.Data, want[r.Path]):
			t.Errorf("%s: zarrita reads %v\nthe encoder wrote %v", r.Path, r.Data, want[r.Path])
		default:
			got++
		}
	}
	if got != len(paths) {
		t.Errorf("zarrita agreed on %d of %d arrays", got, len(paths))
	}
}
