package fusemount

import (
	"encoding/json"
	"log/slog"
	"math"
	"sync/atomic"
	"time"
)

// A latencies is a histogram of request service times: how long the daemon
// took to answer, from the handler's start to its reply. It is safe for
// concurrent use; the zero value is ready.
type latencies struct {
	counts [len(latencyBounds) + 1]atomic.Uint64 // by bucket; the last is beyond every bound
	sum    atomic.Int64                          // nanoseconds
}

// latencyBounds are the buckets' upper bounds in seconds: 10 µs doubling
// to about 1.3 s.
var latencyBounds = func() [18]float64 {
	var b [18]float64
	for i := range b {
		b[i] = 10e-6 * math.Pow(2, float64(i))
	}
	return b
}()

// observe counts one request that started at start and ends now.
func (l *latencies) observe(start time.Time) { l.add(time.Since(start)) }

// add counts one request that took d.
func (l *latencies) add(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(latencyBounds) && s > latencyBounds[i] {
		i++
	}
	l.counts[i].Add(1)
	l.sum.Add(int64(d))
}

// A Latency is a snapshot of a histogram of service times, in the form
// Prometheus' histograms take: cumulative counts by upper bound.
type Latency struct {
	Bounds []float64 // upper bounds, seconds, ascending
	Counts []uint64  // requests that took at most Bounds[i], cumulative
	Count  uint64    // every request, those beyond the last bound too
	Sum    float64   // seconds, over every request
}

func (l *latencies) snapshot() Latency {
	out := Latency{Bounds: latencyBounds[:], Counts: make([]uint64, len(latencyBounds)), Sum: time.Duration(l.sum.Load()).Seconds()}
	var n uint64
	for i := range l.counts {
		n += l.counts[i].Load()
		if i < len(latencyBounds) {
			out.Counts[i] = n
		}
	}
	out.Count = n
	return out
}

// Quantile returns the upper bound of the bucket that holds the q-th
// quantile (0 < q <= 1) of the requests, +Inf beyond the last bound, 0 when
// there were none: p50 is Quantile(0.5).
func (l Latency) Quantile(q float64) float64 {
	if l.Count == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(l.Count)))
	for i, c := range l.Counts {
		if c >= want {
			return l.Bounds[i]
		}
	}
	return math.Inf(1)
}

// LogValue logs a Latency as its count and quantiles.
func (l Latency) LogValue() slog.Value {
	return slog.GroupValue(slog.Uint64("n", l.Count), slog.Float64("p50_s", l.Quantile(0.5)), slog.Float64("p99_s", l.Quantile(0.99)))
}

// MarshalJSON writes the histogram with its p50 and p99 (bucket bounds).
func (l Latency) MarshalJSON() ([]byte, error) {
	type plain Latency
	p50, p99 := l.Quantile(0.5), l.Quantile(0.99)
	if math.IsInf(p99, 1) {
		p99 = -1 // beyond the last bound; JSON has no infinity
	}
	return json.Marshal(struct {
		plain
		P50 float64 `json:"P50Seconds"`
		P99 float64 `json:"P99Seconds"`
	}{plain(l), p50, p99})
}
