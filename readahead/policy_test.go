package readahead

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// read is one read in a policy table: reader pid, chunk index, and whether
// the reader had to wait for it.
type read struct {
	pid    uint32
	i      int64
	waited bool
}

// seq returns reads of indices by pid 1.
func seq(is ...int64) []read {
	rs := make([]read, len(is))
	for k, i := range is {
		rs[k] = read{pid: 1, i: i}
	}
	return rs
}

// span returns from, from+step, ..., up to and including to.
func span(from, to, step int64) []int64 {
	var s []int64
	for i := from; (step > 0 && i <= to) || (step < 0 && i >= to); i += step {
		s = append(s, i)
	}
	return s
}

func cat(parts ...[]int64) []int64 { return slices.Concat(parts...) }

// plan replays reads through p, one State per pid as the Loader keeps them,
// and returns every index planned, in order.
func plan(p Policy, n int64, reads []read) []int64 {
	states := map[uint32]State{}
	var got []int64
	for _, r := range reads {
		s, pl := p.Next(states[r.pid], Access{Index: r.i, Len: n, Waited: r.waited})
		states[r.pid] = s
		got = slices.AppendSeq(got, pl.All())
	}
	return got
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name  string
		len   int64 // chunks in the grid
		reads []read
		want  []int64 // every index planned, in order
	}{
		{"two reads are no pattern", 100, seq(0, 1), nil},
		// Seen at the third read; the window starts at 2 and doubles at
		// every top-up, which happens once half of it is consumed.
		{"sequential", 100, seq(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), span(3, 25, 1)},
		{"sequential, reordered by the kernel", 100, seq(0, 2, 1, 3, 5, 4, 6, 7), span(3, 13, 1)},
		{"one read per FUSE request of the same chunk", 100, seq(0, 0, 0, 1, 1, 1, 2, 2, 2, 3), span(3, 7, 1)},
		{"backwards", 100, seq(50, 49, 48, 47, 46, 45), span(47, 37, -1)},
		// Grid 10×4×5 (200 chunks): a step along axis 0 is 4×5 = 20.
		{"strided: axis 0 of a 3-D grid", 200, seq(7, 27, 47, 67, 87), span(67, 147, 20)},
		// Grid 8×6: walking down one column of tiles steps by 6.
		{"strided: a 2-D tile column", 48, seq(2, 8, 14, 20), span(20, 44, 6)},
		{"strided, reordered", 200, seq(0, 20, 10, 30, 50, 40), span(30, 130, 10)},
		{"end of grid", 10, seq(5, 6, 7, 8, 9), span(8, 9, 1)},
		{"strided end of grid", 200, seq(120, 140, 160, 180), []int64{180}},
		{"backwards to the start", 100, seq(4, 3, 2, 1, 0), span(1, 0, -1)},
		{"random", 200, seq(17, 93, 4, 61, 38, 150, 77, 12, 199, 45), nil},
		{"sequential, then a random read stops prefetch", 100, seq(0, 1, 2, 3, 80, 81), span(3, 7, 1)},
		{"sequential, jump, sequential again", 100, seq(0, 1, 2, 50, 51, 52, 53), cat(span(3, 4, 1), span(53, 57, 1))},
		{"waiting grows the window", 100, []read{{1, 0, false}, {1, 1, false}, {1, 2, false}, {1, 3, true}}, span(3, 11, 1)},
		{"interleaved readers with their own pids", 200,
			[]read{{1, 0, false}, {2, 100, false}, {1, 1, false}, {2, 101, false}, {1, 2, false}, {2, 102, false}, {1, 3, false}, {2, 103, false}},
			[]int64{3, 4, 103, 104, 5, 6, 7, 105, 106, 107}},
		{"interleaved readers sharing a pid look random", 200, seq(0, 100, 1, 101, 2, 102, 3, 103), nil},
		{"reads outside the grid are ignored", 10, seq(0, 1, 10, -1, 2), span(3, 4, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(Policy{}, tt.len, tt.reads)
			if !slices.Equal(got, tt.want) {
				t.Errorf("planned %v\nwant    %v", got, tt.want)
			}
		})
	}
}

// TestPolicyBackfill: a read that overtakes the plan, within Slack, moves
// the plan past the chunks it skipped, unless Backfill says that their
// reads are on the way.
func TestPolicyBackfill(t *testing.T) {
	tests := []struct {
		name     string
		backfill bool
		reads    []read
		want     []int64
	}{
		// Seen at 2 (3 and 4 planned); 10 overtakes the plan.
		{"overtaken", false, seq(0, 1, 2, 10), cat(span(3, 4, 1), span(11, 14, 1))},
		{"overtaken, backfilled", true, seq(0, 1, 2, 10), span(3, 14, 1)},
		{"the skipped reads come, nothing planned twice", true, seq(0, 1, 2, 10, 5, 6, 7, 8, 9, 11, 12), span(3, 20, 1)},
		{"backwards, backfilled", true, seq(50, 49, 48, 40), span(47, 36, -1)},
		{"past the slack: a new pattern", true, seq(0, 1, 2, 30, 31, 32), cat(span(3, 4, 1), span(33, 34, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(Policy{Slack: 16, Backfill: tt.backfill}, 100, tt.reads)
			if !slices.Equal(got, tt.want) {
				t.Errorf("planned %v\nwant    %v", got, tt.want)
			}
		})
	}
}

func TestPolicyCut(t *testing.T) {
	var p Policy
	var s State
	var pl Plan
	for i := range int64(6) { // sequential: window grows to 8
		s, pl = p.Next(s, Access{Index: i, Len: 1000})
	}
	if s.Window() != 8 || pl.N != 6 || pl.From != 8 {
		t.Fatalf("after 6 reads: window %d, plan %+v", s.Window(), pl)
	}
	s = p.Cut(s, pl, 2) // only 8 and 9 fitted the budget
	if s.Window() != 4 {
		t.Errorf("window %d after Cut, want 4", s.Window())
	}
	// 10..13 were dropped from the plan, so they are planned again once
	// the reader gets close, and the window does not grow on that top-up.
	var got []int64
	for i := int64(6); i < 8; i++ {
		s, pl = p.Next(s, Access{Index: i, Len: 1000})
		got = slices.AppendSeq(got, pl.All())
	}
	if want := span(10, 11, 1); !slices.Equal(got, want) {
		t.Errorf("after Cut planned %v, want %v", got, want)
	}
	if s.Window() != 4 {
		t.Errorf("window %d, want 4 (no growth right after a cut)", s.Window())
	}
	// With room again, the next top-up grows the window.
	for i := int64(8); i < 10; i++ {
		s, pl = p.Next(s, Access{Index: i, Len: 1000})
	}
	if s.Window() != 8 || pl.From != 12 || pl.N != 6 {
		t.Errorf("window %d, plan %+v; want window 8, plan 12..17", s.Window(), pl)
	}
	if s = p.Cut(State{}, pl, 0); s != (State{}) {
		t.Errorf("Cut changed a state with no pattern")
	}
}

// TestPolicyInvariants replays long mixed traces and checks what must hold
// for any trace: plans stay in the grid, never exceed MaxWindow ahead of
// the reader, and never plan an index twice while one pattern lasts.
func TestPolicyInvariants(t *testing.T) {
	p := Policy{MinWindow: 2, MaxWindow: 16}
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 3))
		n := 1 + r.Int64N(500)
		var s State
		seen := map[int64]bool{}
		pos, step := int64(0), int64(1)
		for range 400 {
			switch r.IntN(10) {
			case 0: // jump
				pos = r.Int64N(n)
				step = []int64{1, 1, -1, 3, 7, 20}[r.IntN(6)]
			case 1: // stay: another request for the same chunk
			default:
				pos += step
				if r.IntN(5) == 0 { // a little reordering
					pos += step
				}
			}
			pos = (pos%n + n) % n
			before := s.Step()
			s2, pl := p.Next(s, Access{Index: pos, Len: n, Waited: r.IntN(4) == 0})
			if s2.Step() != before || s2.Step() == 0 {
				clear(seen)
			}
			for i := range pl.All() {
				if i < 0 || i >= n {
					t.Fatalf("seed %d: planned %d outside [0,%d)", seed, i, n)
				}
				if seen[i] {
					t.Fatalf("seed %d: planned %d twice in one pattern", seed, i)
				}
				seen[i] = true
			}
			if s2.Step() != 0 {
				if ahead := (s2.planned - s2.head) / s2.Step(); ahead > p.MaxWindow || ahead < 0 {
					t.Fatalf("seed %d: %d chunks planned ahead, max %d", seed, ahead, p.MaxWindow)
				}
			}
			if (pl.N > 0) != (s2.Step() != 0 && pl.N > 0) {
				t.Fatalf("seed %d: a plan without a pattern", seed)
			}
			s = s2
		}
	}
}

// A reader scanning a 1-D array of 100 chunks. The Loader keeps one State per
// array and reader process and prefetches every Plan.
func ExamplePolicy() {
	var p Policy // defaults: window 2 to 64 chunks
	var s State
	for i := range int64(10) {
		var pl Plan
		s, pl = p.Next(s, Access{Index: i, Len: 100})
		if pl.N > 0 {
			fmt.Printf("read %d: prefetch %d..%d (window %d)\n", i, pl.From, pl.Index(pl.N-1), s.Window())
		}
	}
	// Output:
	// read 2: prefetch 3..4 (window 2)
	// read 3: prefetch 5..7 (window 4)
	// read 5: prefetch 8..13 (window 8)
	// read 9: prefetch 14..25 (window 16)
}

// TestPolicyFor: the largest window covers the store's latency at
// aheadRate, within half the readahead budget and twice the store reads in
// flight, and is never below the configured one.
func TestPolicyFor(t *testing.T) {
	for _, tt := range []struct {
		name      string
		latency   time.Duration
		chunk     int64 // bytes
		budget    int64
		fetchers  int
		maxWindow int64 // configured; 0: the default
		want      int64
	}{
		{"local", 100 * time.Microsecond, 64 << 10, 256 << 20, 0, 0, 64},
		{"remote, small chunks", 20 * time.Millisecond, 64 << 10, 256 << 20, 0, 0, 512},
		{"remote, fewer fetchers", 20 * time.Millisecond, 64 << 10, 256 << 20, 100, 0, 200},
		{"remote, small budget", 20 * time.Millisecond, 64 << 10, 16 << 20, 0, 0, 128},
		{"remote, 4 KiB chunks", 5 * time.Millisecond, 4 << 10, 1 << 30, 1000, 0, 2000},
		{"remote, large chunks", 20 * time.Millisecond, 1 << 20, 256 << 20, 0, 0, 64},
		{"configured wider", 20 * time.Millisecond, 1 << 20, 256 << 20, 0, 100, 100},
		{"no reads yet", 0, 64 << 10, 256 << 20, 0, 0, 64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			per := tt.chunk / 4
			a := zlibArray(t, []int{int(per * 10)}, []int{int(per / 2)}) // float64: chunk bytes = 8 * per/2
			l := New(Config{Store: fixture(t, a, "", nil), ReadaheadBudget: tt.budget, Fetchers: tt.fetchers, Policy: Policy{MaxWindow: tt.maxWindow}})
			defer l.Close()
			l.latency.Store(int64(tt.latency))
			if got := l.policyFor(a).MaxWindow; got != tt.want {
				t.Errorf("MaxWindow = %d, want %d", got, tt.want)
			}
		})
	}
}

// planSlabs is plan for a grid of slabs of slab chunks each.
func planSlabs(p Policy, n, slab int64, reads []read) []int64 {
	states := map[uint32]State{}
	var got []int64
	for _, r := range reads {
		s, pl := p.Next(states[r.pid], Access{Index: r.i, Len: n, Slab: slab, Waited: r.waited})
		states[r.pid] = s
		got = slices.AppendSeq(got, pl.All())
	}
	return got
}

// TestPolicySlabs: a reader that read one slab whole, in order, gets the
// rest of each slab it begins planned at its first chunk, wherever it
// jumps (a shuffled DataLoader reading a[i] for random i); one that reads
// slabs partly, or out of order, does not.
func TestPolicySlabs(t *testing.T) {
	// 10 slabs of 8 chunks (a grid of 10×2×4).
	const n, slab = 80, 8
	whole := func(s int64) []int64 { return span(s*slab, s*slab+slab-1, 1) }
	tests := []struct {
		name  string
		reads []read
		want  []int64
	}{
		// Slab 3 read whole: its +1 pattern plans ahead (into slab 4:
		// the reader is not known yet); then slabs 7 and 1 are each
		// planned whole at their first chunk, and their +1 patterns plan
		// again what they cover (the Loader takes a chunk once), never
		// past the slab's end.
		{"whole slabs at random", seq(cat(whole(3), whole(7), whole(1))...),
			cat(span(27, 28, 1), span(29, 31, 1), span(32, 37, 1), span(57, 63, 1), span(59, 60, 1), span(61, 63, 1), span(9, 15, 1), span(11, 12, 1), span(13, 15, 1))},
		// Slabs read one after the other: the +1 pattern plans on across
		// slab ends.
		{"whole slabs in order", seq(cat(whole(0), whole(1), whole(2))...),
			span(3, 49, 1)},
		// The first chunk of each slab only (a[i, :128, :128]): nothing.
		{"the first chunk of each slab", seq(24, 56, 8, 40, 72, 16), nil},
		// Half of each slab, then a jump: never whole, so the first chunk
		// of slab 1 plans nothing (the +1 patterns inside each half plan
		// as they would anywhere).
		{"half slabs", seq(24, 25, 26, 27, 56, 57, 58, 59, 8), cat(span(27, 28, 1), span(29, 31, 1), span(59, 60, 1), span(61, 63, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planSlabs(Policy{}, n, slab, tt.reads)
			if !slices.Equal(got, tt.want) {
				t.Errorf("planned %v\nwant    %v", got, tt.want)
			}
		})
	}
}
