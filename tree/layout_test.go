package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestNative: under Native an order F array's chunk files hold its chunks
// in C order, and its .zarray and its entry in .zmetadata say order C;
// arrays stored C order, little-endian, are served as without Native.
func TestNative(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, _ := newTestTree(t, s, func(c *Config) { c.Native = true })
	c := *s.Arrays["group/nested"]
	c.Order = "C"
	for _, k := range []string{"0/0", "1/1", "0/1"} {
		got, err := tr.ReadFile(ctx, "group/nested/"+k)
		coords := []int{int(k[0] - '0'), int(k[2] - '0')}
		if want := c.Chunk(coords); err != nil || !bytes.Equal(got, want) {
			t.Errorf("group/nested/%s: %x, %v; want %x (C order)", k, got, err, want)
		}
	}
	order := func(doc []byte) string {
		var m struct{ Order string }
		json.Unmarshal(doc, &m)
		return m.Order
	}
	if b, err := tr.ReadFile(ctx, "group/nested/.zarray"); err != nil || order(b) != "C" {
		t.Errorf("group/nested/.zarray: %s, %v; want order C", b, err)
	}
	var zm struct{ Metadata map[string]json.RawMessage }
	if b, err := tr.ReadFile(ctx, ".zmetadata"); err != nil || json.Unmarshal(b, &zm) != nil || order(zm.Metadata["group/nested/.zarray"]) != "C" {
		t.Errorf(".zmetadata: group/nested/.zarray is %s, %v; want order C", zm.Metadata["group/nested/.zarray"], err)
	}
	for _, p := range []string{"temp/0.0", "temp/.zarray", "legacy/0/1", "scalar/0"} {
		b, err := tr.ReadFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		s.CheckServed(t, p, b)
	}
}
