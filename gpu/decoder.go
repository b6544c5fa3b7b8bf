package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnavailable means there is no usable GPU: no driver library, a driver
// that fails to initialise, no device, or a device the kernels cannot run
// on. The wrapping error says which; Reason extracts it.
var ErrUnavailable = errors.New("gpu: unavailable")

// unavailable is an error wrapping ErrUnavailable with a reason and, where
// a driver call failed, that call's error.
type unavailable struct {
	reason string
	err    error // may be nil
	absent bool  // no GPU at all (Absent)
}

func (e *unavailable) Error() string        { return ErrUnavailable.Error() + ": " + e.reason }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }
func (e *unavailable) Unwrap() error        { return e.err }

func unavailableErr(err error, format string, args ...any) error {
	return &unavailable{reason: fmt.Sprintf(format, args...), err: err}
}

// absentErr is unavailableErr for a machine without a GPU.
func absentErr(err error, format string, args ...any) error {
	return &unavailable{reason: fmt.Sprintf(format, args...), err: err, absent: true}
}

// Absent reports whether err, from Open, says there is no GPU at all: no
// driver library, or a driver that finds no device. The rest of
// ErrUnavailable is a GPU that is there and does not work (a driver that
// fails, a device the kernels cannot run on): worth a warning where the
// absence of one is not.
func Absent(err error) bool {
	var u *unavailable
	return errors.As(err, &u) && u.absent
}

// Reason returns why the GPU is unavailable, from an error returned by Open
// (the text after "gpu: unavailable: "), or err's text for other errors.
func Reason(err error) string {
	var u *unavailable
	if errors.As(err, &u) {
		return u.reason
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// Config configures Open. The zero value is usable.
type Config struct {
	// Library is the driver library to load; "" means "libcuda.so.1".
	Library string
	// Device is the CUDA device ordinal.
	Device int
	// Streams is how many slices of a batch are in flight at once, each on
	// its own CUDA stream with its own staging buffers; 0 means 4.
	Streams int
	// SliceBytes is the decoded size of one slice (one kernel launch);
	// chunks larger than this decode on the CPU. 0 means 64 MiB (a guess:
	// tune it with BenchmarkGPU on the GPU). Per stream, pinned host memory
	// is about 2.6 × SliceBytes and device memory about 3.8 × SliceBytes,
	// allocated on first use.
	SliceBytes int
	// Log receives warnings (device failures, after which the decoder
	// sends everything to the CPU); nil discards them.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Library == "" {
		c.Library = "libcuda.so.1"
	}
	if c.Streams <= 0 {
		c.Streams = 4
	}
	if c.SliceBytes <= 0 {
		c.SliceBytes = 64 << 20
	}
	c.SliceBytes = min(c.SliceBytes, 1<<30)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Device describes the GPU a Decoder runs on.
type Device struct {
	Name         string // e.g. "NVIDIA H200"
	Ordinal      int
	Major, Minor int // compute capability
	SMs          int // multiprocessors
	Driver       int // CUDA driver version, e.g. 13000
}

func (d Device) String() string {
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, driver %d.%d)", d.Name, d.Major, d.Minor, d.SMs, d.Driver/1000, d.Driver%1000/10)
}

// An engine runs packed slices: the CUDA driver, or the Go emulation. A
// slot is one set of staging buffers and, on a GPU, device buffers and a
// stream; an engine call uses one slot at a time, and different slots may
// run at once.
type engine interface {
	name() string
	alloc(inCap, outCap int) (*slot, error)
	// run uploads s.in[:sl.inLen()], decodes and unshuffles, and downloads
	// the statuses and output into s.out[:sl.outSize()].
	run(s *slot, sl *slice) error
	free(s *slot)
	close()
}

// A slot is a set of staging buffers. in and out are host memory the
// engine owns (pinned on a GPU); a slot belongs to one slice at a time.
type slot struct {
	in, out []byte
	dev     any
	kernel  time.Duration // device time of the kernels in the last run (0 if unknown)
	total   time.Duration // device time from upload start to download end
}

// A Decoder decodes batches on one GPU. It is safe for concurrent use.
type Decoder struct {
	cfg    Config // immutable after Open
	eng    engine
	dev    Device
	inCap  int // staging sizes of a slot
	outCap int

	free chan *slot // idle slots

	mu     sync.RWMutex // held for reading by DecodeBatch, for writing by Close
	closed bool         // guarded by mu

	slotMu sync.Mutex // guards made and all
	made   int        // slots allocated, <= cfg.Streams
	all    []*slot    // every allocated slot, freed by Close

	broken atomic.Pointer[error] // first device failure; then everything goes to the CPU
	dead   chan struct{}         // closed on the first device failure
	stats  counters
}

// counters are the Stats fields, updated atomically.
type counters struct {
	batches, slices, gpuJobs, cpuJobs, outBytes atomic.Int64
	kernel, device                              atomic.Int64 // nanoseconds
}

// Stats are cumulative counts of a Decoder's work.
type Stats struct {
	Batches  int64         // DecodeBatch calls that used the GPU
	Slices   int64         // kernel launches (of zf_lz4)
	GPUJobs  int64         // chunks decoded on the GPU
	CPUJobs  int64         // chunks of GPU batches decoded on the CPU instead
	OutBytes int64         // decoded bytes written by the GPU
	Kernel   time.Duration // device time in kernels (CUDA events)
	Device   time.Duration // device time from first upload to last download, summed over slices
}

// Stats returns the counters so far.
func (g *Decoder) Stats() Stats {
	c := &g.stats
	return Stats{
		Batches: c.batches.Load(), Slices: c.slices.Load(), GPUJobs: c.gpuJobs.Load(),
		CPUJobs: c.cpuJobs.Load(), OutBytes: c.outBytes.Load(),
		Kernel: time.Duration(c.kernel.Load()), Device: time.Duration(c.device.Load()),
	}
}

// Open loads the CUDA driver from cfg.Library, initialises it and prepares
// device cfg.Device: its primary context and the kernels. Without a usable
// GPU it returns an error wrapping ErrUnavailable. Close releases it.
func Open(cfg Config) (*Decoder, error) {
	cfg = cfg.withDefaults()
	eng, dev, err := openCUDA(cfg)
	if err != nil {
		return nil, err
	}
	return newDecoder(cfg, eng, dev), nil
}

// newEmulated returns a Decoder whose kernels run in Go (emulate.go). It is
// for tests: it checks everything but the device.
func newEmulated(cfg Config) *Decoder {
	return newDecoder(cfg.withDefaults(), &emuEngine{}, Device{Name: "emulated"})
}

func newDecoder(cfg Config, eng engine, dev Device) *Decoder {
	out := cfg.SliceBytes
	in := out + out/2 + 1<<20 // descriptors and incompressible streams
	return &Decoder{cfg: cfg, eng: eng, dev: dev, inCap: in, outCap: out + out/8 + 1<<20, free: make(chan *slot, cfg.Streams), dead: make(chan struct{})}
}

// Device describes the GPU.
func (g *Decoder) Device() Device { return g.dev }

// maxJobOut is the largest chunk a slice takes; larger ones decode on the CPU.
func (g *Decoder) maxJobOut() int { return g.cfg.SliceBytes }

// Close frees the device and pinned memory and releases the context. Batches
// running when Close is called finish first; later ones decode on the CPU.
func (g *Decoder) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	for _, s := range g.all {
		g.eng.free(s)
	}
	g.all = nil
	g.eng.close()
	return nil
}

// acquire returns an idle slot, allocating one while fewer than
// cfg.Streams exist. The caller holds g.mu for reading, so Close waits.
// A failed allocation counts as a device failure: it and every waiter get
// an error, and their slices decode on the CPU.
func (g *Decoder) acquire(ctx context.Context) (*slot, error) {
	select {
	case s := <-g.free:
		return s, nil
	default:
	}
	g.slotMu.Lock()
	grow := g.made < g.cfg.Streams
	if grow {
		g.made++
	}
	g.slotMu.Unlock()
	if grow {
		s, err := g.eng.alloc(g.inCap, g.outCap)
		g.slotMu.Lock()
		if err != nil {
			g.made--
		} else {
			g.all = append(g.all, s)
		}
		g.slotMu.Unlock()
		if err != nil {
			g.fail(err)
			return nil, err
		}
		return s, nil
	}
	select {
	case s := <-g.free:
		return s, nil
	case <-g.dead:
		return nil, g.failed()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *Decoder) release(s *slot) { g.free <- s }

// fail records the first device failure and logs it; from then on every
// batch decodes on the CPU.
func (g *Decoder) fail(err error) {
	if g.broken.CompareAndSwap(nil, &err) {
		close(g.dead)
		g.cfg.Log.Warn("GPU decoder failed; decoding on the CPU from now on", "device", g.dev.Name, "err", err)
	}
}

// failed returns the device failure, if any.
func (g *Decoder) failed() error {
	if p := g.broken.Load(); p != nil {
		return *p
	}
	return nil
}
