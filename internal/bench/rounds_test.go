package bench

import (
	"slices"
	"testing"
)

func TestRoundOrder(t *testing.T) {
	for _, r := range []struct {
		round int
		sides []int
		want  []int
	}{
		{0, nil, nil},
		{0, []int{0, 1, 2}, []int{0, 1, 2}},
		{1, []int{0, 1, 2}, []int{0, 2, 1}},
		{2, []int{0, 1, 2}, []int{2, 0, 1}},
		{3, []int{0, 1, 2}, []int{2, 1, 0}},
		{4, []int{0, 1, 2}, []int{1, 2, 0}},
		{1, []int{0, 1}, []int{0, 1}},
		{2, []int{0, 1}, []int{0, 1}},
		{3, []int{0, 1, 2, 3, 4}, []int{2, 1, 0, 4, 3}},
	} {
		in := slices.Clone(r.sides)
		if got := RoundOrder(r.round, in); !slices.Equal(got, r.want) || !slices.Equal(in, r.sides) {
			t.Errorf("RoundOrder(%d, %v) = %v (sides now %v); want %v", r.round, r.sides, got, in, r.want)
		}
	}
}
