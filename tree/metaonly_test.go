package tree

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
)

// TestMetadataOnly: a Tree without Chunks describes every array as one
// with a loader does, reading shard indexes from the store (index at the
// end, at the start, corrupt, under a crc32c over the whole shard), reads
// metadata, and refuses chunk reads with ErrNoChunks (and a mount:
// fusemount.TestMountMetadataOnly).
func TestMetadataOnly(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV3Store(t)
	full, _ := newV3Tree(t, s, false)
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	var mu sync.Mutex
	reads := map[string]int{} // reads of each stored value, whole or a range
	ds.SetHook(func(op, key string, _ int64, _ time.Duration, _ error) {
		if op == "read" || op == "read_range" {
			mu.Lock()
			reads[key]++
			mu.Unlock()
		}
	})
	meta := New(Config{Store: ds})
	want, err := full.Arrays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := meta.Arrays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d arrays, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Path != w.Path || g.Format != w.Format || !slices.Equal(g.Shards, w.Shards) || g.Chunks != w.Chunks ||
			g.Stored != w.Stored || g.Presented != w.Presented || (g.PassThrough == nil) != (w.PassThrough == nil) {
			t.Errorf("%s: %+v, want %+v", w.Path, g, w)
		}
	}
	for k, n := range reads {
		if n > 1 {
			t.Errorf("%s read %d times by the walk, want once", k, n)
		}
	}
	if _, err := meta.ReadFile(ctx, "sharded/end/zarr.json"); err != nil {
		t.Errorf("zarr.json: %v", err)
	}
	for _, p := range []string{"plain/c/0/0", "sharded/end/c/0/1"} {
		if _, err := meta.ReadFile(ctx, p); !errors.Is(err, ErrNoChunks) {
			t.Errorf("%s: %v, want ErrNoChunks", p, err)
		}
	}
}
