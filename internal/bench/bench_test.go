package bench

import (
	"os"
	"testing"
	"time"
)

// A testCell is a line of a report, as callers define theirs (cell).
type testCell struct{ chunk, via string }

// TestBenchRatio: ratios pair the rounds (they ran side by side), and the
// median is taken over rounds.
func TestBenchRatio(t *testing.T) {
	r := NewResults[testCell]()
	a, b := testCell{"1MiB", "mount"}, testCell{"1MiB", "self"}
	for _, round := range [][2][]float64{{{2, 4}, {1, 1}}, {{3, 6}, {1, 2}}, {{1, 1}, {2, 1}}} {
		r.Add(a, round[0])
		r.Add(b, round[1])
	}
	if med, lo, hi, ok := r.Epoch(a, 1); !ok || med != 4 || lo != 1 || hi != 6 {
		t.Errorf("epoch 2 of a: %v %v %v %v", med, lo, hi, ok)
	}
	// Round ratios in epoch 1: 2, 3, 0.5.
	if med, lo, hi, ok := r.Ratio(a, b, 0); !ok || med != 2 || lo != 0.5 || hi != 3 {
		t.Errorf("ratio: %v [%v-%v] %v; want 2 [0.5-3]", med, lo, hi, ok)
	}
	if _, _, _, ok := r.Ratio(a, testCell{}, 0); ok {
		t.Error("ratio with an unmeasured testCell")
	}
	if _, _, _, ok := r.Epoch(a, 5); ok {
		t.Error("an epoch that was not read")
	}
}

// TestVmHWM: a process's peak RSS, from its status.
func TestVmHWM(t *testing.T) {
	if n, err := VmHWM(os.Getpid()); err != nil || n <= 0 {
		t.Errorf("VmHWM(self) = %d, %v", n, err)
	}
}

func TestParseCPUTime(t *testing.T) {
	stat := "4242 (zfuse (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 123 45 0 0 20 0 9 0 100 1000000 2000 18446744073709551615"
	if d, err := ParseCPUTime(stat); err != nil || d != 1680*time.Millisecond {
		t.Errorf("ParseCPUTime = %v, %v; want 1.68s", d, err)
	}
	if _, err := ParseCPUTime("4242 (zfuse) S 1"); err == nil {
		t.Errorf("short stat line: no error")
	}
	if d, err := CPUTime(os.Getpid()); err != nil || d < 0 {
		t.Errorf("CPUTime(self) = %v, %v", d, err)
	}
}
