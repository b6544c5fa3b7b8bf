package bench

import "slices"

// RoundOrder returns sides in round r's order: rotated left by r, and
// reversed in odd rounds, so that no side always meets a warmer (or
// busier) machine, or follows the same one. sides is left as it is.
func RoundOrder[T any](r int, sides []T) []T {
	if len(sides) == 0 {
		return nil
	}
	k := r % len(sides)
	out := slices.Concat(sides[k:], sides[:k])
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}
