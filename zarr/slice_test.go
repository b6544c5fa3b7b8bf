package zarr

import (
	"slices"
	"strings"
	"testing"
)

// TestChunkRange: slice selections (warmup --slice) become the chunk coordinates that
// hold them, numpy's way (negative indices from the end, ranges clipped).
func TestChunkRange(t *testing.T) {
	shape, chunks := []int{100, 50, 7}, []int{10, 20, 7}
	for _, tc := range []struct {
		expr, name string
		lo, hi     []int
		wantErr    string
	}{
		{"t2m[0:100]", "t2m", []int{0, 0, 0}, []int{10, 3, 1}, ""},
		{"t2m[:]", "t2m", []int{0, 0, 0}, []int{10, 3, 1}, ""},
		{"t2m[]", "t2m", []int{0, 0, 0}, []int{10, 3, 1}, ""},
		{"[5:25]", "", []int{0, 0, 0}, []int{3, 3, 1}, ""},
		{"g/t2m[10:20, 20:40]", "g/t2m", []int{1, 1, 0}, []int{2, 2, 1}, ""},
		{"a[95]", "a", []int{9, 0, 0}, []int{10, 3, 1}, ""},
		{"a[-1, -1, 0]", "a", []int{9, 2, 0}, []int{10, 3, 1}, ""},
		{"a[-15:]", "a", []int{8, 0, 0}, []int{10, 3, 1}, ""},
		{"a[:-90]", "a", []int{0, 0, 0}, []int{1, 3, 1}, ""},
		{"a[90:1000]", "a", []int{9, 0, 0}, []int{10, 3, 1}, ""},
		{"a[50:40]", "a", nil, nil, ""}, // empty
		{"a[100]", "a", nil, nil, "out of range"},
		{"a[-101]", "a", nil, nil, "out of range"},
		{"a[0:10:2]", "a", nil, nil, "steps"},
		{"a[x]", "a", nil, nil, "not an index"},
		{"a[1,2,3,4]", "a", nil, nil, "4 dimensions"},
		{"a", "a", nil, nil, "want NAME[SEL]"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			name, sel, err := ParseSlice(tc.expr)
			var lo, hi []int
			if err == nil {
				lo, hi, err = ChunkRange(shape, chunks, sel)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s: %v, want an error with %q", tc.expr, err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("%s: %v", tc.expr, err)
			case name != tc.name:
				t.Errorf("%s: name %q, want %q", tc.expr, name, tc.name)
			case tc.lo == nil:
				n := 0
				EachC(lo, hi, func([]int) bool { n++; return true })
				if n != 0 {
					t.Errorf("%s: %d chunk files, want none", tc.expr, n)
				}
			case !slices.Equal(lo, tc.lo) || !slices.Equal(hi, tc.hi):
				t.Errorf("%s: chunks [%v, %v), want [%v, %v)", tc.expr, lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

// FuzzParseSlice: any slice expression parses or fails cleanly, and a parsed one
// gives chunk ranges within the grid.
func FuzzParseSlice(f *testing.F) {
	for _, s := range []string{"t2m[0:100]", "[1, -2, 3:]", "a/b[:, 5]", "x[-100:-1]", "[]"} {
		f.Add(s)
	}
	shape, chunks := []int{100, 50, 7}, []int{10, 20, 7}
	f.Fuzz(func(t *testing.T, expr string) {
		_, sel, err := ParseSlice(expr)
		if err != nil {
			return
		}
		lo, hi, err := ChunkRange(shape, chunks, sel)
		if err != nil {
			return
		}
		for i := range shape {
			grid := (shape[i] + chunks[i] - 1) / chunks[i]
			if lo[i] < 0 || hi[i] > grid || (lo[i] > hi[i]) {
				t.Fatalf("%q: chunks [%v, %v) outside the grid", expr, lo, hi)
			}
		}
	})
}
