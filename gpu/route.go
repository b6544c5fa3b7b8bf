package gpu

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/zfuse/zfuse/codec"
)

// A Mode is the --decoder flag: which decoder a batch goes to.
type Mode string

const (
	// Auto sends a batch to the GPU when its codec has a GPU path and its
	// GPU-eligible chunks decode to at least MinBatchBytes; else the CPU.
	Auto Mode = "auto"
	// CPU never uses the GPU (and never loads the driver).
	CPU Mode = "cpu"
	// GPU requires a GPU (NewRouter fails without one) and sends every
	// batch of a codec with a GPU path to it, however small. Codecs without
	// one still decode on the CPU.
	GPU Mode = "gpu"
)

// ParseMode parses a --decoder value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, CPU, GPU:
		return m, nil
	}
	return "", fmt.Errorf("gpu: decoder %q: want auto, cpu or gpu", s)
}

// DefaultMinBatchBytes is the auto mode's break-even: batches whose
// GPU-eligible chunks decode to fewer bytes go to the CPU pool.
//
// PLACEHOLDER, NOT MEASURED: 16 MiB is a guess (a launch and two copies cost
// tens of microseconds; 16 MiB takes 16 cores about 1 ms). Replace it with
// the crossover of BenchmarkBreakEven (gpu vs cpu ns per batch by batch
// size) measured on the GPU machine; see gpu/run_on_device.sh.
const DefaultMinBatchBytes = 16 << 20

// A Pool is the CPU decoder the router falls back to; *codec.Pool is one.
type Pool interface {
	Batch(d codec.Decoder) codec.BatchDecoder
}

// A Router picks the decoder for each array's codec pipeline: the GPU, the
// CPU pool, or the GPU with the CPU pool for small batches. It is safe for
// concurrent use.
type Router struct {
	mode     Mode
	gpu      *Decoder // nil without a usable GPU
	noGPU    error    // why gpu is nil (nil in CPU mode)
	cpu      Pool     // nil: codec.Batch
	minBytes int64
}

// NewRouter opens the GPU unless mode is CPU. In GPU mode a missing GPU is
// an error (wrapping ErrUnavailable); in Auto mode everything decodes on
// the CPU, and NoGPU says why (the caller logs it: at Warn where a GPU is
// there and fails, not where there is none). cpu may be nil (codec.Batch,
// one goroutine); minBatchBytes <= 0 means DefaultMinBatchBytes.
func NewRouter(mode Mode, cfg Config, cpu Pool, minBatchBytes int64) (*Router, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	if minBatchBytes <= 0 {
		minBatchBytes = DefaultMinBatchBytes
	}
	r := &Router{mode: mode, cpu: cpu, minBytes: minBatchBytes}
	if mode == CPU {
		return r, nil
	}
	g, err := Open(cfg)
	if err != nil {
		if mode == GPU {
			return nil, fmt.Errorf("--decoder gpu: %w", err)
		}
		r.noGPU = err
		return r, nil
	}
	r.gpu = g
	return r, nil
}

// newRouterWith is NewRouter with a given Decoder (an emulated one in tests).
func newRouterWith(mode Mode, g *Decoder, noGPU error, cpu Pool, minBatchBytes int64) *Router {
	return &Router{mode: mode, gpu: g, noGPU: noGPU, cpu: cpu, minBytes: minBatchBytes}
}

// GPU returns the GPU decoder, or nil.
func (r *Router) GPU() *Decoder { return r.gpu }

// NoGPU returns why the router has no GPU in Auto mode (an error from
// Open: see Absent), or nil.
func (r *Router) NoGPU() error { return r.noGPU }

// Close closes the GPU decoder, if any. It does not close the CPU pool.
func (r *Router) Close() error {
	if r.gpu != nil {
		return r.gpu.Close()
	}
	return nil
}

func (r *Router) cpuBatch(d codec.Decoder) codec.BatchDecoder {
	if r.cpu == nil {
		return codec.Batch(d)
	}
	return r.cpu.Batch(d)
}

// Route returns the BatchDecoder for arrays decoded by d, which decoder it
// is, "gpu" (in Auto mode: with batches under MinBatchBytes on the CPU) or
// "cpu", and why, in a few words: "blosc lz4 shuffle", "zstd has no GPU
// kernel", "no GPU", "the GPU failed (see the log)", "--decoder cpu"; why
// there is no GPU is NoGPU's, for the log. compressor is the array's
// compressor configuration (a v2 .zarray "compressor" or the v3 blosc
// codec's configuration), or nil when unknown; it lets a Blosc array whose
// cname has no GPU kernel go straight to the CPU.
func (r *Router) Route(d codec.Decoder, compressor codec.Config) (b codec.BatchDecoder, decoder, why string) {
	cpu := r.cpuBatch(d)
	if r.mode == CPU {
		return cpu, "cpu", "--decoder cpu"
	}
	what, ok := gpuPath(d, compressor)
	switch {
	case !ok:
		return cpu, "cpu", what + " has no GPU kernel"
	case r.gpu == nil && Absent(r.noGPU):
		return cpu, "cpu", "no GPU"
	case r.gpu == nil:
		return cpu, "cpu", "the GPU failed (see the log)"
	}
	min, why := int64(0), what
	if r.mode == Auto {
		min, why = r.minBytes, fmt.Sprintf("%s (batches under %d MiB on the CPU)", what, r.minBytes>>20)
	}
	g, ok := r.gpu.batch(d, cpu, min)
	if !ok { // not reached: gpuPath and batch know the same pipelines
		return cpu, "cpu", what + " has no GPU kernel"
	}
	return g, "gpu", why
}

// Batch returns Route's BatchDecoder.
func (r *Router) Batch(d codec.Decoder, compressor codec.Config) codec.BatchDecoder {
	b, _, _ := r.Route(d, compressor)
	return b
}

// Why says which decoder Route picks for d and why, for `zfuse info`:
// "gpu: blosc lz4 shuffle", "cpu: zstd has no GPU kernel", "cpu: no GPU".
func (r *Router) Why(d codec.Decoder, compressor codec.Config) string {
	_, decoder, why := r.Route(d, compressor)
	return decoder + ": " + why
}

// gpuPath describes d's pipeline ("blosc lz4 bitshuffle", "lz4") and says
// whether it has a GPU path; for one without, what names the codec.
func gpuPath(d codec.Decoder, compressor codec.Config) (what string, ok bool) {
	switch pipelineOf(d) {
	case pipeLZ4:
		return "lz4", true
	case pipeBlosc:
		cname, _ := compressor.String("cname", "")
		switch cname {
		case "", "lz4", "lz4hc":
		default:
			return "blosc " + cname, false
		}
		what = "blosc lz4"
		if cname == "" {
			what = "blosc (lz4 chunks)"
		}
		shuffle, err := compressor.Int("shuffle", -2)
		if err != nil {
			shuffle = -2
		}
		switch shuffle {
		case 0:
			what += " noshuffle"
		case 1:
			what += " shuffle"
		case 2:
			what += " bitshuffle"
		case -1:
			what += " autoshuffle"
		}
		return what, true
	}
	return codecName(d), false
}

// codecName names a decoder for a message: its type's name in lower case
// without the "Codec" or "Filter" that codec's unexported types carry where
// the bare name is an imported package's (zlibCodec, deltaFilter), stages
// joined with "+" for a pipeline.
func codecName(d codec.Decoder) string {
	if p, ok := d.(*codec.Pipeline); ok {
		names := make([]string, len(p.Stages))
		for i, s := range p.Stages {
			names[i] = codecName(s)
		}
		return strings.Join(names, "+")
	}
	t := reflect.TypeOf(d)
	if t == nil {
		return "no codec"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := strings.TrimSuffix(strings.TrimSuffix(t.Name(), "Codec"), "Filter")
	return strings.ToLower(name)
}
