package fusemount

import (
	"math"
	"testing"
	"time"
)

func TestLatencies(t *testing.T) {
	var l latencies
	if got := l.snapshot().Quantile(0.5); got != 0 {
		t.Errorf("no requests: p50 %v, want 0", got)
	}
	for range 90 {
		l.add(15 * time.Microsecond) // in (10 µs, 20 µs]
	}
	for range 9 {
		l.add(3 * time.Millisecond) // in (2.56 ms, 5.12 ms]
	}
	l.add(10 * time.Second) // beyond the last bound
	s := l.snapshot()
	for _, tt := range []struct{ q, want float64 }{{0.5, 20e-6}, {0.9, 20e-6}, {0.95, 5.12e-3}, {0.99, 5.12e-3}, {1, math.Inf(1)}} {
		if got := s.Quantile(tt.q); math.Abs(got-tt.want) > 1e-9 && got != tt.want {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if s.Count != 100 || s.Counts[len(s.Counts)-1] != 99 || math.Abs(s.Sum-(90*15e-6+9*3e-3+10)) > 1e-9 {
		t.Errorf("snapshot %+v", s)
	}
}
