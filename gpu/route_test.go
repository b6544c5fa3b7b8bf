package gpu

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"auto", Auto, true}, {"cpu", CPU, true}, {"gpu", GPU, true},
		{"", "", false}, {"GPU", "", false}, {"cuda", "", false},
	} {
		got, err := ParseMode(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseMode(%q) = %q, %v", c.in, got, err)
		}
	}
}

func mustConfig(t *testing.T, s string) codec.Config {
	t.Helper()
	var c codec.Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCodec(t *testing.T, s string) codec.Decoder {
	t.Helper()
	d, err := codec.New(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWhy is the table of what `zfuse info` prints per array.
func TestWhy(t *testing.T) {
	g := newEmulated(Config{})
	noGPU := absentErr(nil, "no CUDA device")
	failed := unavailableErr(nil, "cuInit: CUDA_ERROR_INVALID_DEVICE (101)")
	blosc := `{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`
	for _, c := range []struct {
		name       string
		r          *Router
		d          string // codec config
		compressor string // hint; "" for none
		filters    bool   // add a delta filter after the compressor
		want       string
	}{
		{"gpu mode blosc", newRouterWith(GPU, g, nil, nil, 0), blosc, blosc, false, "gpu: blosc lz4 shuffle"},
		{"gpu mode bitshuffle", newRouterWith(GPU, g, nil, nil, 0), blosc, `{"id": "blosc", "cname": "lz4hc", "shuffle": 2}`, false, "gpu: blosc lz4 bitshuffle"},
		{"gpu mode no hint", newRouterWith(GPU, g, nil, nil, 0), blosc, "", false, "gpu: blosc (lz4 chunks)"},
		{"gpu mode lz4", newRouterWith(GPU, g, nil, nil, 0), `{"id": "lz4"}`, "", false, "gpu: lz4"},
		{"auto lz4", newRouterWith(Auto, g, nil, nil, 16<<20), `{"id": "lz4"}`, "", false, "gpu: lz4 (batches under 16 MiB on the CPU)"},
		{"blosc zstd", newRouterWith(GPU, g, nil, nil, 0), blosc, `{"id": "blosc", "cname": "zstd", "shuffle": 1}`, false, "cpu: blosc zstd has no GPU kernel"},
		{"zstd", newRouterWith(Auto, g, nil, nil, 0), `{"id": "zstd"}`, "", false, "cpu: zstd has no GPU kernel"},
		{"filters", newRouterWith(Auto, g, nil, nil, 0), blosc, blosc, true, "cpu: blosc+delta has no GPU kernel"},
		{"no gpu", newRouterWith(Auto, nil, noGPU, nil, 0), blosc, blosc, false, "cpu: no GPU"},
		{"a gpu that fails", newRouterWith(Auto, nil, failed, nil, 0), blosc, blosc, false, "cpu: the GPU failed (see the log)"},
		{"no gpu, no kernel", newRouterWith(Auto, nil, noGPU, nil, 0), `{"id": "zlib"}`, "", false, "cpu: zlib has no GPU kernel"},
		{"cpu mode", newRouterWith(CPU, nil, nil, nil, 0), blosc, blosc, false, "cpu: --decoder cpu"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mustCodec(t, c.d)
			if c.filters {
				d = codec.Chain(d, mustCodec(t, `{"id": "delta", "dtype": "<i4"}`))
			}
			var hint codec.Config
			if c.compressor != "" {
				hint = mustConfig(t, c.compressor)
			}
			if got := c.r.Why(d, hint); got != c.want {
				t.Errorf("Why = %q, want %q", got, c.want)
			}
			_, isGPU := c.r.Batch(d, hint).(*gpuBatch)
			if wantGPU := c.want[:4] == "gpu:"; isGPU != wantGPU {
				t.Errorf("Batch is a GPU batch: %v, want %v", isGPU, wantGPU)
			}
		})
	}
}

// countingPool is a CPU pool that counts the batches it decodes.
type countingPool struct{ batches atomic.Int64 }

func (p *countingPool) Batch(d codec.Decoder) codec.BatchDecoder {
	return countingBatch{p, codec.Batch(d)}
}

type countingBatch struct {
	p *countingPool
	codec.BatchDecoder
}

func (b countingBatch) DecodeBatch(ctx context.Context, jobs []codec.Job) error {
	b.p.batches.Add(1)
	return b.BatchDecoder.DecodeBatch(ctx, jobs)
}

// TestAutoThreshold: auto mode sends small batches to the CPU pool and big
// ones to the GPU; gpu mode sends both to the GPU; both decode correctly.
func TestAutoThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	var chunks []chunk
	for range 8 {
		n := 64 << 10
		chunks = append(chunks, chunk{name: "c", src: encodeBlosc(t, floatData(r, n), bloscOpts{typesize: 4, shuffle: 1, split: true}), room: n})
	}
	small, big := chunks[:1], chunks // 64 KiB and 512 KiB
	for _, c := range []struct {
		mode          Mode
		wantGPU       int64 // batches on the GPU of the two
		wantCPUBatchs int64
	}{{Auto, 1, 1}, {GPU, 2, 0}} {
		g := newEmulated(Config{})
		pool := &countingPool{}
		rt := newRouterWith(c.mode, g, nil, pool, 256<<10)
		bd := rt.Batch(codec.Blosc{}, nil)
		for _, batch := range [][]chunk{small, big} {
			if n := agree(t, bd, codec.Blosc{}, batch); n != len(batch) {
				t.Errorf("%s: %d of %d decoded", c.mode, n, len(batch))
			}
		}
		if got := g.Stats().Batches; got != c.wantGPU {
			t.Errorf("%s: %d batches on the GPU, want %d", c.mode, got, c.wantGPU)
		}
		if got := pool.batches.Load(); got != c.wantCPUBatchs {
			t.Errorf("%s: %d batches on the CPU pool, want %d", c.mode, got, c.wantCPUBatchs)
		}
	}
}

// TestClosedDecoderUsesCPU: after Close, batches still decode, on the CPU.
func TestClosedDecoderUsesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	chunks := goChunks(t, r, true)[:30]
	g := newEmulated(Config{})
	bd := mustBatch(t, g, codec.Blosc{})
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := agree(t, bd, codec.Blosc{}, chunks); n != len(chunks) {
		t.Errorf("%d of %d decoded", n, len(chunks))
	}
	if g.Stats().Batches != 0 {
		t.Error("closed decoder used the GPU path")
	}
	if !errors.Is(unavailableErr(nil, "x"), ErrUnavailable) {
		t.Error("unavailable does not match ErrUnavailable")
	}
}
