package bench

import "slices"

// Median returns the median and the range of v, which must not be empty.
func Median(v []float64) (med, lo, hi float64) {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// Results are the rates (GB/s) of every cell, one line of a report
// (of the caller's type C), by round and epoch. A Results is not safe for
// concurrent use.
type Results[C comparable] struct {
	Rates map[C][][]float64 // [round][epoch]
	Order []C               // in the order first measured
}

// NewResults returns empty Results.
func NewResults[C comparable]() *Results[C] { return &Results[C]{Rates: map[C][][]float64{}} }

// Add records one round of cell c: its rate in each epoch.
func (r *Results[C]) Add(c C, epochs []float64) {
	if _, ok := r.Rates[c]; !ok {
		r.Order = append(r.Order, c)
	}
	r.Rates[c] = append(r.Rates[c], epochs)
}

// Epoch returns the median and the range over rounds of cell c's rate in
// epoch e (0-based); ok is false when c was not measured.
func (r *Results[C]) Epoch(c C, e int) (med, lo, hi float64, ok bool) {
	var xs []float64
	for _, round := range r.Rates[c] {
		if e < len(round) {
			xs = append(xs, round[e])
		}
	}
	if len(xs) == 0 {
		return 0, 0, 0, false
	}
	med, lo, hi = Median(xs)
	return med, lo, hi, true
}

// Ratio returns the median over rounds of a's rate ÷ b's in epoch e, each
// round's pair taken together (they ran side by side), and its range.
func (r *Results[C]) Ratio(a, b C, e int) (med, lo, hi float64, ok bool) {
	ra, rb := r.Rates[a], r.Rates[b]
	var xs []float64
	for i := range min(len(ra), len(rb)) {
		if e < len(ra[i]) && e < len(rb[i]) && rb[i][e] > 0 {
			xs = append(xs, ra[i][e]/rb[i][e])
		}
	}
	if len(xs) == 0 {
		return 0, 0, 0, false
	}
	med, lo, hi = Median(xs)
	return med, lo, hi, true
}
