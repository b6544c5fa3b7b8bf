package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// poolJobs makes n random jobs for d's encoder enc: valid, truncated,
// bit-flipped, too large for dst, and garbage.
func poolJobs(r *rand.Rand, n int, enc func([]byte) []byte) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		want := compData(r.IntN(20000), r.Uint64())
		src := enc(want)
		room := len(want)
		switch r.IntN(5) {
		case 1:
			src = src[:r.IntN(len(src)+1)]
		case 2:
			src = bytes.Clone(src)
			src[r.IntN(len(src))] ^= byte(1 + r.IntN(255))
		case 3:
			room = r.IntN(len(want) + 1)
		case 4:
			src = compData(r.IntN(100), r.Uint64())
		}
		jobs[i] = Job{Src: src, Dst: make([]byte, 0, room)}
	}
	return jobs
}

func poolClone(jobs []Job) []Job {
	c := make([]Job, len(jobs))
	for i, j := range jobs {
		c[i] = Job{Src: j.Src, Dst: make([]byte, 0, cap(j.Dst))}
	}
	return c
}

// poolSameErr reports whether two job errors are the same kind.
func poolSameErr(a, b error) bool {
	for _, s := range []error{nil, ErrTooLarge, ErrChecksum, ErrCorrupt, context.Canceled} {
		if (a == s || s != nil && errors.Is(a, s)) != (b == s || s != nil && errors.Is(b, s)) {
			return false
		}
	}
	return true
}

func TestPoolMatchesBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p := NewPool(3)
	defer p.Close()
	for _, c := range compCases {
		t.Run(c.name, func(t *testing.T) {
			d := compNew(t, c.config)
			n := 16
			if strings.HasPrefix(c.name, "lzma/") {
				n = 6 // slow decoder
			}
			jobs := poolJobs(r, n, c.enc)
			ref := poolClone(jobs)
			if err := p.Batch(d).DecodeBatch(context.Background(), jobs); err != nil {
				t.Fatal(err)
			}
			if err := Batch(d).DecodeBatch(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
			for i := range jobs {
				if !bytes.Equal(jobs[i].Dst, ref[i].Dst) || !poolSameErr(jobs[i].Err, ref[i].Err) {
					t.Errorf("job %d: pool (%d bytes, %v), Batch (%d bytes, %v)", i, len(jobs[i].Dst), jobs[i].Err, len(ref[i].Dst), ref[i].Err)
				}
			}
		})
	}
}

// TestPoolConcurrentBatches runs many batches at once on one pool (run it
// with -race).
func TestPoolConcurrentBatches(t *testing.T) {
	p := NewPool(0)
	defer p.Close()
	d := compNew(t, `{"id":"zstd"}`)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			jobs := poolJobs(r, 20, encZstd())
			ref := poolClone(jobs)
			p.Batch(d).DecodeBatch(context.Background(), jobs)
			Batch(d).DecodeBatch(context.Background(), ref)
			for i := range jobs {
				if !bytes.Equal(jobs[i].Dst, ref[i].Dst) || !poolSameErr(jobs[i].Err, ref[i].Err) {
					t.Errorf("batch %d job %d differs", g, i)
				}
			}
		})
	}
	wg.Wait()
}

// poolGated is an instrumented decoder: each decode counts itself in
// flight, then waits for the gate. It copies src.
type poolGated struct {
	gate     chan struct{}
	inflight atomic.Int32
	max      atomic.Int32
	calls    atomic.Int32
}

func (g *poolGated) Decode(dst, src []byte) ([]byte, error) {
	n := g.inflight.Add(1)
	g.calls.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			break
		}
	}
	<-g.gate
	g.inflight.Add(-1)
	return Raw{}.Decode(dst, src)
}

func TestPoolBound(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := NewPool(workers)
				defer p.Close()
				g := &poolGated{gate: make(chan struct{})}
				const batches, perBatch = 4, 10
				results := make([][]Job, batches)
				var wg sync.WaitGroup
				for b := range batches {
					jobs := make([]Job, perBatch)
					for i := range jobs {
						jobs[i] = Job{Src: []byte{byte(b), byte(i)}, Dst: make([]byte, 0, 2)}
					}
					results[b] = jobs
					wg.Go(func() { p.Batch(g).DecodeBatch(context.Background(), jobs) })
				}
				synctest.Wait() // every worker holds a decode at the gate
				if n := g.inflight.Load(); n != int32(workers) {
					t.Fatalf("%d decodes in flight, want %d (the worker count)", n, workers)
				}
				close(g.gate)
				wg.Wait()
				if m := g.max.Load(); m != int32(workers) {
					t.Fatalf("at most %d decodes ran at once, want %d", m, workers)
				}
				for b, jobs := range results {
					for i, j := range jobs {
						if j.Err != nil || !bytes.Equal(j.Dst, []byte{byte(b), byte(i)}) {
							t.Fatalf("batch %d job %d: %v %v", b, i, j.Dst, j.Err)
						}
					}
				}
			})
		})
	}
}

func TestPoolCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 2
		p := NewPool(workers)
		defer p.Close()
		g := &poolGated{gate: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		jobs := make([]Job, 10)
		for i := range jobs {
			jobs[i] = Job{Src: []byte{byte(i)}, Dst: make([]byte, 0, 1)}
		}
		var err error
		done := make(chan struct{})
		go func() { err = p.Batch(g).DecodeBatch(ctx, jobs); close(done) }()
		synctest.Wait() // two jobs started, the third waits to be handed out
		cancel()
		close(g.gate)
		<-done
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("DecodeBatch = %v, want context.Canceled", err)
		}
		started := int(g.calls.Load())
		if started < workers || started >= len(jobs) {
			t.Fatalf("%d jobs started, want at least %d and fewer than %d", started, workers, len(jobs))
		}
		ok, cancelled := 0, 0
		for i, j := range jobs {
			switch {
			case j.Err == nil && bytes.Equal(j.Dst, []byte{byte(i)}):
				ok++
			case errors.Is(j.Err, context.Canceled):
				cancelled++
			default:
				t.Errorf("job %d: %v %v", i, j.Dst, j.Err)
			}
		}
		if ok != started || cancelled != len(jobs)-started {
			t.Fatalf("%d decoded, %d cancelled; %d started", ok, cancelled, started)
		}

		// A batch whose ctx is already done decodes nothing.
		before := g.calls.Load()
		jobs = []Job{{Src: []byte{1}, Dst: make([]byte, 0, 1)}}
		if err := p.Batch(g).DecodeBatch(ctx, jobs); !errors.Is(err, context.Canceled) || !errors.Is(jobs[0].Err, context.Canceled) {
			t.Fatalf("cancelled ctx: %v, job %v", err, jobs[0].Err)
		}
		if g.calls.Load() != before {
			t.Fatalf("a job ran under a cancelled ctx")
		}
	})
}

// TestPoolClose checks that Close stops every worker (synctest.Test fails
// if a goroutine of the bubble is left blocked) and that later batches fail.
func TestPoolClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(4)
		jobs := []Job{{Src: []byte("ab"), Dst: make([]byte, 0, 2)}}
		if err := p.Batch(Raw{}).DecodeBatch(context.Background(), jobs); err != nil || string(jobs[0].Dst) != "ab" {
			t.Fatalf("%v %q", err, jobs[0].Dst)
		}
		p.Close()
		p.Close()
		jobs = []Job{{Src: []byte("ab"), Dst: make([]byte, 0, 2)}, {Src: []byte("c"), Dst: make([]byte, 0, 2)}}
		err := p.Batch(Raw{}).DecodeBatch(context.Background(), jobs)
		if !errors.Is(err, ErrPoolClosed) || !errors.Is(jobs[0].Err, ErrPoolClosed) || !errors.Is(jobs[1].Err, ErrPoolClosed) {
			t.Fatalf("after Close: %v, jobs %v %v", err, jobs[0].Err, jobs[1].Err)
		}
	})
}

func TestPoolWorkers(t *testing.T) {
	p := NewPool(-1)
	defer p.Close()
	if p.Workers() < 1 {
		t.Fatalf("Workers() = %d", p.Workers())
	}
}

// BenchmarkPool decodes a batch of 64 zstd chunks of 256 KiB with 1, 2 and
// GOMAXPROCS workers; MB/s is of decoded bytes.
func BenchmarkPool(b *testing.B) {
	const n, size = 64, 256 << 10
	d := compNew(b, `{"id":"zstd"}`)
	enc := encZstd()
	srcs := make([][]byte, n)
	for i := range srcs {
		srcs[i] = enc(compData(size, uint64(i)))
	}
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			p := NewPool(workers)
			defer p.Close()
			bd := p.Batch(d)
			jobs := make([]Job, n)
			for i := range jobs {
				jobs[i] = Job{Src: srcs[i], Dst: make([]byte, 0, size)}
			}
			b.SetBytes(n * size)
			b.ReportAllocs()
			for b.Loop() {
				if err := bd.DecodeBatch(context.Background(), jobs); err != nil {
					b.Fatal(err)
				}
			}
			for _, j := range jobs {
				if j.Err != nil {
					b.Fatal(j.Err)
				}
			}
		})
	}
}
