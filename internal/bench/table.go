package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A Table prints the aligned columns of a report: a tabwriter with
// columns two spaces apart. A Table is not safe for concurrent use.
type Table struct{ tw *tabwriter.Writer }

// NewTable returns a Table that writes to w once flushed.
func NewTable(w io.Writer) *Table { return &Table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)} }

// Row adds a line of cells, separated by tabs: a row that ends with ""
// has its last cell aligned (padded) too.
func (t *Table) Row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

// Flush writes the rows added.
func (t *Table) Flush() error { return t.tw.Flush() }

// FormatRange shows a median and its range: "1.23 [1.00-1.50]".
func FormatRange(med, lo, hi float64) string { return fmt.Sprintf("%.2f [%.2f-%.2f]", med, lo, hi) }

// FormatRatio shows a median ratio and its range: "1.23x [1.00-1.50]".
func FormatRatio(med, lo, hi float64) string { return fmt.Sprintf("%.2fx [%.2f-%.2f]", med, lo, hi) }

// EpochCells shows cell c's median and range in each of epochs 0 to n-1
// (FormatRange), "-" for one not measured.
func (r *Results[C]) EpochCells(c C, n int) []string {
	out := make([]string, n)
	for e := range out {
		out[e] = "-"
		if med, lo, hi, ok := r.Epoch(c, e); ok {
			out[e] = FormatRange(med, lo, hi)
		}
	}
	return out
}

// RatioCells shows a's rate ÷ b's (Ratio, FormatRatio) in each of epochs 0
// to n-1, "-" where there is none.
func (r *Results[C]) RatioCells(a, b C, n int) []string {
	out := make([]string, n)
	for e := range out {
		out[e] = "-"
		if med, lo, hi, ok := r.Ratio(a, b, e); ok {
			out[e] = FormatRatio(med, lo, hi)
		}
	}
	return out
}

// A Target is a goal a report judges: what was measured against what was
// wanted, and whether it was met.
type Target struct {
	Name, Got, Want string
	OK              bool
}

// Verdict is "met" for a target met, else "NOT MET".
func (t Target) Verdict() string {
	if t.OK {
		return "met"
	}
	return "NOT MET"
}

// Paired returns the median and the range of the ratios a[i] ÷ b[i]: the
// rates of two sides measured in the same rounds, each round's pair taken
// together (they met the same load). a and b must be as long, not empty.
func Paired(a, b []float64) (med, lo, hi float64) {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return Median(r)
}
