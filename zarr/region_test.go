package zarr

import (
	"fmt"
	"slices"
	"testing"
)

// TestEachC: the C-order odometer visits every coordinate of a range once,
// the last axis fastest, in the order Linear counts, and Unravel inverts
// that count.
func TestEachC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi []int
		want   string
	}{
		{"rank 0", nil, nil, "[[]]"},
		{"1d", []int{2}, []int{5}, "[[2] [3] [4]]"},
		{"2d", []int{0, 1}, []int{2, 3}, "[[0 1] [0 2] [1 1] [1 2]]"},
		{"3d one", []int{1, 2, 3}, []int{2, 3, 4}, "[[1 2 3]]"},
		{"empty axis", []int{0, 4}, []int{3, 4}, "[]"},
		{"inverted", []int{3}, []int{1}, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]int
			EachC(tc.lo, tc.hi, func(c []int) bool {
				got = append(got, slices.Clone(c))
				return true
			})
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("EachC(%v, %v) = %s, want %s", tc.lo, tc.hi, s, tc.want)
			}
		})
	}
	t.Run("stop", func(t *testing.T) {
		n := 0
		EachC([]int{0, 0}, []int{3, 3}, func([]int) bool { n++; return n < 4 })
		if n != 4 {
			t.Errorf("fn called %d times after returning false at 4", n)
		}
	})
	t.Run("unravel", func(t *testing.T) {
		grid := []int{3, 1, 4}
		var i int64
		EachC(make([]int, 3), grid, func(c []int) bool {
			if u := Unravel(i, grid); !slices.Equal(u, c) {
				t.Errorf("Unravel(%d, %v) = %v, want %v", i, grid, u, c)
			}
			i++
			return true
		})
		if i != 12 {
			t.Errorf("visited %d coordinates, want 12", i)
		}
	})
}
