package tree

import "testing"

// TestNodeChanged: what makes a file looked up again another version of
// it, to be served under a new inode.
func TestNodeChanged(t *testing.T) {
	base := Node{key: "a/0.0", kind: kindChunk, size: 24, stored: 10, version: "1"}
	meta := Node{key: "a/.zarray", kind: kindMeta, size: 3, stored: 3, data: []byte("abc")}
	for _, tc := range []struct {
		name string
		old  Node
		edit func(n *Node)
		want bool
	}{
		{"the same", base, func(*Node) {}, false},
		{"another stored version", base, func(n *Node) { n.version = "2" }, true},
		{"another stored size", base, func(n *Node) { n.stored = 11 }, true},
		{"another presented size", base, func(n *Node) { n.size = 48 }, true},
		{"another kind", base, func(n *Node) { n.kind = kindStored }, true},
		{"confirmed now", Node{key: "a/0.0", kind: kindChunk, size: 24, unconfirmed: true}, func(n *Node) { n.unconfirmed = false }, true},
		{"metadata: the same bytes", meta, func(n *Node) { n.data = []byte("abc") }, false},
		{"metadata: other bytes", meta, func(n *Node) { n.data = []byte("abd") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.old
			tc.edit(&n)
			if got := tc.old.Changed(&n); got != tc.want {
				t.Errorf("changed = %v, want %v", got, tc.want)
			}
		})
	}
}
