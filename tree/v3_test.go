package tree

import (
	"context"
	"slices"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// newV3Tree opens s as a Tree, presenting v3 as v2 if asV2, whose log
// goes to the returned buffer.
func newV3Tree(t testing.TB, s *testutil.V3Store, asV2 bool) (*Tree, *testutil.LogBuffer) {
	return treeOver(t, dirStore(t, s.Root), func(c *Config) { c.AsV2 = asV2 })
}

// TestV3Arrays: zfuse info's walk finds every v3 array, with its format,
// shard shape and presented chunk count; under --as-v2 the string array is
// listed as hidden.
func TestV3Arrays(t *testing.T) {
	s := testutil.NewV3Store(t)
	for _, asV2 := range []bool{false, true} {
		tr, _ := newV3Tree(t, s, asV2)
		infos, err := tr.Arrays(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		byPath := map[string]ArrayInfo{}
		for _, in := range infos {
			byPath[in.Path] = in
		}
		for _, a := range s.Arrays {
			in, ok := byPath[a.Path]
			switch {
			case !ok:
				t.Errorf("as-v2 %v: %s not listed", asV2, a.Path)
				continue
			case in.Format != 3 || in.PassThrough != nil || in.Hidden != nil:
				t.Errorf("as-v2 %v: %s: %+v", asV2, a.Path, in)
			case in.Chunks != int64(len(s.Raw[a.Path])) || in.Presented != in.Chunks*int64(len(a.Chunk(make([]int, len(a.Shape))))):
				t.Errorf("as-v2 %v: %s: %d chunks, %d bytes presented; want %d chunks", asV2, a.Path, in.Chunks, in.Presented, len(s.Raw[a.Path]))
			case a.Inner != nil && !slices.Equal(in.Shards, a.Chunks):
				t.Errorf("%s: shards %v, want %v", a.Path, in.Shards, a.Chunks)
			case a.Inner != nil && !slices.Equal(in.Array.Chunks, a.Inner):
				t.Errorf("%s: chunks %v, want the inner %v", a.Path, in.Array.Chunks, a.Inner)
			case in.Array.Format != map[bool]int{false: 3, true: 2}[asV2]:
				t.Errorf("%s: presented as v%d", a.Path, in.Array.Format)
			}
		}
		str := byPath["strings"]
		if asV2 && str.Hidden == nil || !asV2 && (str.PassThrough == nil || str.Hidden != nil) {
			t.Errorf("as-v2 %v: strings: %+v", asV2, str)
		}
	}
}
