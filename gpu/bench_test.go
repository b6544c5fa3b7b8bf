package gpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

// Benchmarks for the GPU machine (run_on_device.sh). Each batch decodes
// ZFUSE_BENCH_MB MiB (default 256) of compressible float32 chunks:
//
//	BenchmarkGPU       host to host: Job.Src in Go memory to Job.Dst, all copies included
//	BenchmarkKernel    kernel only: one slice, one launch of each kernel, timed by CUDA events
//	BenchmarkCPUPool   codec.Pool with GOMAXPROCS workers, the same data
//	BenchmarkBreakEven GPU vs CPU pool by batch size, to set DefaultMinBatchBytes
//
// MB/s is decoded bytes; kernel-GB/s and device-GB/s come from the events.

// A benchSet is one encoded dataset.
type benchSet struct {
	d      codec.Decoder
	chunks []chunk
	raw    int64 // decoded bytes
	enc    int64
}

// jobs returns fresh jobs for the set.
func (s *benchSet) jobs() []codec.Job { return jobsFor(s.chunks) }

var benchSets sync.Map // "kind/chunk/total" -> *benchSet

// dataset returns (and caches) total bytes of chunkSize chunks of kind:
// "blosc-shuffle" (typesize 4, byte shuffle, split, 256 KiB blocks as
// numcodecs' lz4 writes float32), "blosc-bitshuffle", or "lz4".
func dataset(t testing.TB, kind string, chunkSize, total int) *benchSet {
	key := fmt.Sprintf("%s/%d/%d", kind, chunkSize, total)
	if s, ok := benchSets.Load(key); ok {
		return s.(*benchSet)
	}
	n := max(1, total/chunkSize)
	s := &benchSet{chunks: make([]chunk, n), d: codec.Blosc{}}
	if kind == "lz4" {
		s.d = codec.LZ4{}
	}
	parallel(n, runtime.GOMAXPROCS(0), func(from, to int) {
		r := rand.New(rand.NewPCG(uint64(from), 99))
		for i := from; i < to; i++ {
			data := floatData(r, chunkSize)
			var enc []byte
			switch kind {
			case "blosc-shuffle":
				enc = encodeBlosc(t, data, bloscOpts{typesize: 4, shuffle: 1, blocksize: 256 << 10, split: true})
			case "blosc-bitshuffle":
				enc = encodeBlosc(t, data, bloscOpts{typesize: 4, shuffle: 2, blocksize: 256 << 10, split: true})
			case "lz4":
				enc = encodeLZ4(t, data)
			default:
				panic("unknown dataset " + kind)
			}
			s.chunks[i] = chunk{name: strconv.Itoa(i), src: enc, room: chunkSize}
		}
	})
	for _, c := range s.chunks {
		s.raw += int64(c.room)
		s.enc += int64(len(c.src))
	}
	benchSets.Store(key, s)
	return s
}

func benchTotal() int {
	if mb, err := strconv.Atoi(os.Getenv("ZFUSE_BENCH_MB")); err == nil && mb > 0 {
		return mb << 20
	}
	return 256 << 20
}

var benchKinds = []string{"blosc-shuffle", "blosc-bitshuffle", "lz4"}
var benchChunks = []int{64 << 10, 256 << 10, 1 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// runBatches decodes the set b.N times with bd and checks every job.
func runBatches(b *testing.B, s *benchSet, bd codec.BatchDecoder) {
	jobs := s.jobs()
	b.SetBytes(s.raw)
	b.ReportAllocs()
	for b.Loop() {
		for i := range jobs {
			jobs[i].Dst = jobs[i].Dst[:0]
		}
		if err := bd.DecodeBatch(b.Context(), jobs); err != nil {
			b.Fatal(err)
		}
	}
	for i := range jobs {
		if jobs[i].Err != nil || len(jobs[i].Dst) != s.chunks[i].room {
			b.Fatalf("chunk %d: %v", i, jobs[i].Err)
		}
	}
	b.ReportMetric(float64(s.raw)/float64(s.enc), "ratio") // after b.Loop, which resets metrics
}

// reportDevice adds the device-side rates between two Stats.
func reportDevice(b *testing.B, before, after Stats) {
	out := float64(after.OutBytes - before.OutBytes)
	if k := (after.Kernel - before.Kernel).Seconds(); k > 0 {
		b.ReportMetric(out/k/1e9, "kernel-GB/s")
	}
	if d := (after.Device - before.Device).Seconds(); d > 0 {
		b.ReportMetric(out/d/1e9, "device-GB/s")
	}
}

func BenchmarkGPU(b *testing.B) {
	g := gpuDevice(b)
	for _, kind := range benchKinds {
		for _, cs := range benchChunks {
			b.Run(kind+"/"+sizeName(cs), func(b *testing.B) {
				s := dataset(b, kind, cs, benchTotal())
				before := g.Stats()
				runBatches(b, s, mustBatch(b, g, s.d))
				reportDevice(b, before, g.Stats())
			})
		}
	}
}

// BenchmarkKernel decodes each batch as a single slice, so that the event
// times measure one launch of zf_lz4 and one of zf_unshuffle over the whole
// batch: the kernels' throughput alone.
func BenchmarkKernel(b *testing.B) {
	gpuDevice(b)
	total := benchTotal()
	g, err := Open(Config{Streams: 1, SliceBytes: total + total/4})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	for _, kind := range benchKinds {
		for _, cs := range benchChunks {
			b.Run(kind+"/"+sizeName(cs), func(b *testing.B) {
				s := dataset(b, kind, cs, total)
				before := g.Stats()
				runBatches(b, s, mustBatch(b, g, s.d))
				after := g.Stats()
				if after.Slices-before.Slices != int64(b.N) {
					b.Fatalf("%d slices for %d batches", after.Slices-before.Slices, b.N)
				}
				reportDevice(b, before, after)
			})
		}
	}
}

func BenchmarkCPUPool(b *testing.B) {
	pool := codec.NewPool(0)
	defer pool.Close()
	for _, kind := range benchKinds {
		for _, cs := range benchChunks {
			b.Run(kind+"/"+sizeName(cs), func(b *testing.B) {
				s := dataset(b, kind, cs, benchTotal())
				runBatches(b, s, pool.Batch(s.d))
			})
		}
	}
}

// BenchmarkBreakEven times batches of 256 KiB blosc-shuffle chunks from
// 256 KiB to 256 MiB on the GPU and on the CPU pool; the smallest size
// where gpu's ns/op is below cpu's is the DefaultMinBatchBytes to set.
func BenchmarkBreakEven(b *testing.B) {
	g := gpuDevice(b)
	pool := codec.NewPool(0)
	defer pool.Close()
	for _, total := range []int{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20} {
		s := dataset(b, "blosc-shuffle", 256<<10, total)
		b.Run(sizeName(total)+"/gpu", func(b *testing.B) { runBatches(b, s, mustBatch(b, g, s.d)) })
		b.Run(sizeName(total)+"/cpu", func(b *testing.B) { runBatches(b, s, pool.Batch(s.d)) })
	}
}
