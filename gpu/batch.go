package gpu

import (
	"context"
	"runtime"
	"sync"

	"github.com/zfuse/zfuse/codec"
)

// pipelineOf says whether d has a GPU path: exactly numcodecs LZ4, or
// exactly Blosc (whose chunks then decode on the GPU when their header says
// lz4/lz4hc). Pipelines with filters after the compressor have none.
func pipelineOf(d codec.Decoder) pipelineKind {
	switch d.(type) {
	case codec.LZ4, *codec.LZ4:
		return pipeLZ4
	case codec.Blosc, *codec.Blosc:
		return pipeBlosc
	}
	return pipeNone
}

// Batch returns a BatchDecoder that decodes with d on the GPU, and true, if
// d has a GPU path; otherwise nil and false, and the caller uses the CPU.
// Chunks the GPU cannot take are decoded with codec.Batch(d) in the same
// call. The result agrees with codec.Batch(d) byte for byte.
func (g *Decoder) Batch(d codec.Decoder) (codec.BatchDecoder, bool) {
	return g.batch(d, codec.Batch(d), 0)
}

// batch is Batch with the CPU decoder for the chunks the GPU does not take
// and a threshold: a batch whose GPU-eligible chunks decode to fewer than
// minBytes goes to cpu whole.
func (g *Decoder) batch(d codec.Decoder, cpu codec.BatchDecoder, minBytes int64) (codec.BatchDecoder, bool) {
	k := pipelineOf(d)
	if k == pipeNone {
		return nil, false
	}
	return &gpuBatch{g: g, kind: k, cpu: cpu, minBytes: minBytes}, true
}

// gpuBatch is the BatchDecoder of one pipeline on one Decoder.
type gpuBatch struct {
	g        *Decoder
	kind     pipelineKind
	cpu      codec.BatchDecoder // for the chunks the GPU does not take
	minBytes int64
}

// DecodeBatch plans the batch, decodes the GPU-eligible chunks slice by
// slice on the device and the others on the CPU at the same time.
func (b *gpuBatch) DecodeBatch(ctx context.Context, jobs []codec.Job) error {
	if err := ctx.Err(); err != nil {
		for i := range jobs {
			jobs[i].Err = err
		}
		return err
	}
	g := b.g
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed || g.failed() != nil {
		return b.cpu.DecodeBatch(ctx, jobs)
	}

	var plans []jobPlan
	var onCPU []int
	var gpuBytes int64
	for i := range jobs {
		p, ok := planJob(b.kind, i, &jobs[i], g.maxJobOut())
		if ok && inNeed(&p) <= g.inCap && outNeed(&p) <= g.outCap {
			plans = append(plans, p)
			gpuBytes += int64(p.out)
		} else {
			onCPU = append(onCPU, i)
		}
	}
	if len(plans) == 0 || gpuBytes < b.minBytes {
		return b.cpu.DecodeBatch(ctx, jobs)
	}
	g.stats.batches.Add(1)
	g.stats.cpuJobs.Add(int64(len(onCPU)))

	var wg sync.WaitGroup
	var cpuErr error
	if len(onCPU) > 0 {
		wg.Go(func() { cpuErr = b.decodeOnCPU(ctx, jobs, onCPU) })
	}
	for _, sl := range sliceJobs(plans, g.inCap, g.outCap) {
		wg.Go(func() { b.runSlice(ctx, sl, jobs) })
	}
	wg.Wait()
	if cpuErr != nil {
		return cpuErr
	}
	if err := ctx.Err(); err != nil {
		for i := range jobs {
			if jobs[i].Err == err {
				return err
			}
		}
	}
	return nil
}

// decodeOnCPU decodes jobs[idx...] with the CPU decoder.
func (b *gpuBatch) decodeOnCPU(ctx context.Context, jobs []codec.Job, idx []int) error {
	sub := make([]codec.Job, len(idx))
	for k, i := range idx {
		sub[k] = jobs[i]
	}
	err := b.cpu.DecodeBatch(ctx, sub)
	for k, i := range idx {
		jobs[i].Dst, jobs[i].Err = sub[k].Dst, sub[k].Err
	}
	return err
}

// runSlice decodes one slice on a slot: pack, run, scatter. A device
// failure sends the slice to the CPU (and every later batch, see fail).
func (b *gpuBatch) runSlice(ctx context.Context, sl *slice, jobs []codec.Job) {
	g := b.g
	s, err := g.acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			for _, p := range sl.jobs {
				jobs[p.job].Err = ctx.Err()
			}
			return
		}
		b.sliceOnCPU(ctx, sl, jobs)
		return
	}
	defer g.release(s)

	workers := copyWorkers(g.cfg.Streams)
	parallel(len(sl.jobs), workers, func(from, to int) { sl.pack(s.in, from, to) })
	if err := g.eng.run(s, sl); err != nil {
		g.fail(err)
		b.sliceOnCPU(ctx, sl, jobs)
		return
	}
	g.stats.slices.Add(1)
	g.stats.gpuJobs.Add(int64(len(sl.jobs)))
	g.stats.outBytes.Add(int64(sl.outLen))
	g.stats.kernel.Add(int64(s.kernel))
	g.stats.device.Add(int64(s.total))

	out := s.out[sl.outOff():]
	parallel(len(sl.jobs), workers, func(from, to int) {
		for i := from; i < to; i++ {
			p := &sl.jobs[i]
			j := &jobs[p.job]
			if err := sl.jobErr(s.out, i); err != nil {
				j.Dst, j.Err = j.Dst[:0], err
				continue
			}
			j.Dst = append(j.Dst[:0], out[sl.outAt[i]:sl.outAt[i]+p.out]...)
			j.Err = nil
		}
	})
}

// sliceOnCPU decodes a slice's jobs with the CPU decoder.
func (b *gpuBatch) sliceOnCPU(ctx context.Context, sl *slice, jobs []codec.Job) {
	idx := make([]int, len(sl.jobs))
	for k, p := range sl.jobs {
		idx[k] = p.job
	}
	b.g.stats.cpuJobs.Add(int64(len(idx)))
	b.decodeOnCPU(ctx, jobs, idx)
}

// copyWorkers is how many goroutines pack or scatter one slice: the CPUs
// shared among the slices in flight.
func copyWorkers(streams int) int {
	return max(1, runtime.GOMAXPROCS(0)/max(1, streams))
}

// parallel calls fn on [from, to) ranges covering [0, n), on up to workers
// goroutines, and waits.
func parallel(n, workers int, fn func(from, to int)) {
	if workers <= 1 || n < 2*workers {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for from := 0; from < n; from += per {
		to := min(from+per, n)
		wg.Go(func() { fn(from, to) })
	}
	wg.Wait()
}
