package codec

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

// ErrPoolClosed is the error of jobs handed to a Pool after Close.
var ErrPoolClosed = errors.New("codec: pool closed")

// A Pool is a fixed set of worker goroutines that decode (and encode)
// chunks on the CPU. However many batches run at once, at most Workers
// chunks are worked on at a time, so a burst of readahead cannot
// oversubscribe the machine. Each BatchDecoder from Batch and each
// BatchEncoder from EncoderBatch shares the pool's workers.
//
// A Pool is safe for concurrent use. Close stops its goroutines.
type Pool struct {
	workers  int           // immutable after NewPool
	prefault bool          // immutable after NewPool: WithPrefault
	tasks    chan poolTask // unbuffered: a task is handed straight to an idle worker
	done     chan struct{} // closed by Close
	close    sync.Once
	wg       sync.WaitGroup // the workers
}

// poolTask is one job of one batch; the batch waits on wg. run is the
// Decode or Encode method of the batch's codec.
type poolTask struct {
	ctx context.Context
	run func(dst, src []byte) ([]byte, error)
	job *Job
	wg  *sync.WaitGroup
}

// NewPool starts workers goroutines; workers <= 0 means GOMAXPROCS.
func NewPool(workers int, opts ...PoolOption) *Pool {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pool{workers: workers, tasks: make(chan poolTask), done: make(chan struct{})}
	for _, o := range opts {
		o(p)
	}
	for range workers {
		p.wg.Go(p.work)
	}
	return p
}

// Workers returns the number of worker goroutines.
func (p *Pool) Workers() int { return p.workers }

func (p *Pool) work() {
	for {
		select {
		case <-p.done:
			return
		case t := <-p.tasks:
			if err := t.ctx.Err(); err != nil {
				t.job.Err = err // not started before ctx ended
			} else {
				t.job.Dst, t.job.Err = t.run(t.job.Dst[:0], t.job.Src)
			}
			t.wg.Done()
			// Leave the P to whoever waits for one: a worker with the
			// next job at hand would otherwise keep it until the
			// scheduler preempts it (10 ms), and a FUSE request arriving
			// meanwhile waits behind the batch.
			runtime.Gosched()
		}
	}
}

// Close stops the workers after the decodes in progress, and waits for
// them. Batches still handing out jobs get ErrPoolClosed for the rest.
// Close is idempotent.
func (p *Pool) Close() error {
	p.close.Do(func() { close(p.done) })
	p.wg.Wait()
	return nil
}

// Batch returns a BatchDecoder that decodes with d on the pool's workers.
// It agrees with codec.Batch(d) byte for byte.
func (p *Pool) Batch(d Decoder) BatchDecoder {
	if p.prefault {
		d = prefault{d}
	}
	return poolBatch{p, d}
}

type poolBatch struct {
	p *Pool
	d Decoder
}

// DecodeBatch hands the jobs to the workers in order and waits for them.
// Jobs not started when ctx ends get ctx.Err(), which is also returned.
func (b poolBatch) DecodeBatch(ctx context.Context, jobs []Job) error {
	return b.p.run(ctx, jobs, b.d.Decode)
}

// EncoderBatch returns a BatchEncoder that encodes with e on the pool's
// workers. It agrees with codec.EncoderBatch(e) byte for byte.
func (p *Pool) EncoderBatch(e Encoder) BatchEncoder { return poolEncode{p, e} }

type poolEncode struct {
	p *Pool
	e Encoder
}

// EncodeBatch hands the jobs to the workers in order and waits for them,
// as DecodeBatch does.
func (b poolEncode) EncodeBatch(ctx context.Context, jobs []Job) error {
	return b.p.run(ctx, jobs, b.e.Encode)
}

// run hands jobs to the workers, each to be done with fn, and waits.
func (p *Pool) run(ctx context.Context, jobs []Job, fn func(dst, src []byte) ([]byte, error)) error {
	var wg sync.WaitGroup
	var stop error
	i := 0
hand:
	for ; i < len(jobs); i++ {
		wg.Add(1)
		t := poolTask{ctx: ctx, run: fn, job: &jobs[i], wg: &wg}
		select {
		case p.tasks <- t:
		case <-ctx.Done():
			wg.Done()
			stop = ctx.Err()
			break hand
		case <-p.done:
			wg.Done()
			stop = ErrPoolClosed
			break hand
		}
	}
	for j := i; j < len(jobs); j++ {
		jobs[j].Err = stop
	}
	wg.Wait()
	if err := ctx.Err(); stop == nil && err != nil {
		// Cancelled after the last hand-off: report it if a worker saw it.
		for j := range jobs {
			if jobs[j].Err == err {
				return err
			}
		}
	}
	return stop
}
