package bench

import (
	"bytes"
	"slices"
	"testing"
)

// TestTable: cells align in columns two spaces apart; a row ending in ""
// pads its last cell too.
func TestTable(t *testing.T) {
	for _, r := range []struct {
		name string
		rows [][]string
		want string
	}{
		{"one", [][]string{{"a"}}, "a\n"},
		{"columns", [][]string{{"target", "ok"}, {"x", "NOT MET"}}, "target  ok\nx       NOT MET\n"},
		{"last padded", [][]string{{"a", "met", ""}, {"bb", "NOT MET", ""}}, "a   met      \nbb  NOT MET  \n"},
		{"ragged", [][]string{{"a", "b", ""}, {"ccc", ""}}, "a    b  \nccc  \n"},
	} {
		t.Run(r.name, func(t *testing.T) {
			var out bytes.Buffer
			tb := NewTable(&out)
			for _, row := range r.rows {
				tb.Row(row...)
			}
			if err := tb.Flush(); err != nil || out.String() != r.want {
				t.Errorf("table %q = %q, %v; want %q", r.rows, out.String(), err, r.want)
			}
		})
	}
}

func TestCells(t *testing.T) {
	r := NewResults[string]()
	r.Add("a", []float64{2, 4})
	r.Add("a", []float64{3})
	r.Add("b", []float64{1, 2})
	r.Add("b", []float64{2, 0})
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"epochs of a", r.EpochCells("a", 3), []string{"2.50 [2.00-3.00]", "4.00 [4.00-4.00]", "-"}},
		{"unmeasured", r.EpochCells("c", 1), []string{"-"}},
		{"a ÷ b", r.RatioCells("a", "b", 3), []string{"1.75x [1.50-2.00]", "2.00x [2.00-2.00]", "-"}},
		{"a ÷ unmeasured", r.RatioCells("a", "c", 1), []string{"-"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestPaired(t *testing.T) {
	for _, r := range []struct {
		a, b        []float64
		med, lo, hi float64
	}{
		{[]float64{2}, []float64{1}, 2, 2, 2},
		{[]float64{2, 3, 1}, []float64{1, 1, 2}, 2, 0.5, 3},
		{[]float64{4, 4}, []float64{1, 4}, 2.5, 1, 4},
	} {
		if med, lo, hi := Paired(r.a, r.b); med != r.med || lo != r.lo || hi != r.hi {
			t.Errorf("Paired(%v, %v) = %v [%v-%v]; want %v [%v-%v]", r.a, r.b, med, lo, hi, r.med, r.lo, r.hi)
		}
	}
}

func TestVerdict(t *testing.T) {
	if v := (Target{OK: true}).Verdict(); v != "met" {
		t.Errorf("met: %q", v)
	}
	if v := (Target{}).Verdict(); v != "NOT MET" {
		t.Errorf("not met: %q", v)
	}
}
