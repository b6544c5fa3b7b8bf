package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// loaderFlags are the flags that size the chunk loader (readahead.Loader),
// choose its decoders and set the mount's kernel readahead. zfuse bench
// passes them on to its mounts.
type loaderFlags struct {
	workers                        int
	decoder                        gpu.Mode
	decoded, compressed, readahead Size
	kernelReadahead                Size
	serving                        fusemount.Serving
	transport                      fusemount.Transport
	cpuProfile                     string // mount: write a CPU profile (go tool pprof) here
	changing                       bool   // the store may change while read (--refresh)
}

// addLoaderFlags defines the flags of the loader and of the mount: zfuse
// mount's, which zfuse bench passes on to its mounts (args).
func addLoaderFlags(fl *flag.FlagSet) *loaderFlags {
	f := addDecodeFlags(fl)
	f.addServingFlags(fl)
	f.addMountFlags(fl)
	return f
}

// addDecodeFlags defines the flags every command that reads chunks takes:
// --workers, --decoder and the budgets. The serving path and the
// transport take their defaults from the environment whether or not
// their flags are defined.
func addDecodeFlags(fl *flag.FlagSet) *loaderFlags {
	// The compressed tier is off by default for a local store: its values
	// are in the kernel's page cache already, and a second copy in the heap
	// costs memory and page faults (a cold scan of a Blosc store ran at
	// 0.44 GB/s with 512 MiB of it, 0.70 without). forSource turns it on
	// for remote stores.
	f := &loaderFlags{workers: runtime.GOMAXPROCS(0), decoder: gpu.Auto, decoded: 1 << 30, compressed: 0, readahead: 256 << 20, kernelReadahead: 16 << 20}
	fl.Var((*countFlag)(&f.workers), "workers", "decode workers (CPU pool): chunks decoded at once")
	fl.Var((*modeFlag)(&f.decoder), "decoder", "which decoder runs LZ4 and Blosc-LZ4 chunks, `auto|cpu|gpu`: auto (an NVIDIA GPU for batches big enough to pay, where there is one; else the CPU pool), cpu, or gpu (refuse to start without a GPU); other codecs always decode on the CPU pool")
	fl.Var(&f.decoded, "cache-decoded", "budget for decoded chunks that have been read (e.g. 512MiB, 2GiB)")
	fl.Var(&f.decoded, "cache", "the same as --cache-decoded")
	fl.Var(&f.compressed, "cache-compressed", "budget for chunks as stored (compressed); saves store reads (0: off, as suits local stores, which the page cache holds)")
	fl.Var(&f.readahead, "readahead", "budget for chunks decoded ahead of readers and not read yet; 0 turns readahead off")
	// ZFUSE_SERVING sets the default, so that a test suite can run every
	// mount it starts on one serving path (CI runs the integration tests
	// on the default path and again on the fallback).
	if v, err := fusemount.ParseServing(os.Getenv("ZFUSE_SERVING")); err == nil {
		f.serving = v
	}
	// ZFUSE_TRANSPORT likewise sets the transport's default.
	if v, err := fusemount.ParseTransport(os.Getenv("ZFUSE_TRANSPORT")); err == nil {
		f.transport = v
	}
	return f
}

// addServingFlags defines --serving and --transport: mount's, and info's,
// which says what a mount would get.
func (f *loaderFlags) addServingFlags(fl *flag.FlagSet) {
	fl.Var(&f.transport, "transport", "mount: how FUSE requests reach zfuse, `auto|uring|dev`: uring (FUSE over io_uring, each request answered on the CPU that made it: Linux 6.14+, once root enabled it with echo Y > /sys/module/fuse/parameters/enable_uring), dev (/dev/fuse); auto is uring where the kernel offers it; uring falls back to dev where it cannot be had (default $ZFUSE_TRANSPORT, else auto)")
	fl.Var(&f.serving, "serving", "mount: how chunk bytes reach readers, `auto|no-open|passthrough|open`: no-open (the kernel's page cache: one READ per chunk, no OPEN), passthrough (the kernel reads memfds the chunks were decoded into, or the stored files of chunks stored uncompressed; needs root and Linux 6.9), open (OPEN and READ through the daemon, the last fallback); auto is no-open where the kernel offers it; a path refused falls back to the next (default $ZFUSE_SERVING, else auto)")
}

// addMountFlags defines the loader's flags that only a mount uses.
func (f *loaderFlags) addMountFlags(fl *flag.FlagSet) {
	fl.Var(&f.kernelReadahead, "kernel-readahead", "mount: the kernel's readahead for the mount, set when running as root; 0 leaves the kernel default")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "mount: write a CPU profile of the whole mount to this file, for go tool pprof")
}

// remoteCompressed is the compressed tier's budget for a remote SOURCE:
// there a miss costs a network round trip.
const remoteCompressed = 512 << 20

// forSource gives a remote SOURCE (a URL) a compressed tier of
// remoteCompressed, unless --cache-compressed was given. Call it after
// fl.Parse.
func (f *loaderFlags) forSource(fl *flag.FlagSet, source string) {
	set := false
	fl.Visit(func(g *flag.Flag) { set = set || g.Name == "cache-compressed" })
	if !set && strings.Contains(source, "://") {
		f.compressed = remoteCompressed
	}
}

// args returns the flags as zfuse mount takes them.
func (f *loaderFlags) args() []string {
	return []string{"--decoder", string(f.decoder), "--workers", strconv.Itoa(f.workers), "--cache-decoded", f.decoded.String(),
		"--cache-compressed", f.compressed.String(), "--readahead", f.readahead.String(),
		"--kernel-readahead", f.kernelReadahead.String(), "--serving", f.serving.String(), "--transport", f.transport.String()}
}

// ownMemory is the mount's own memory beside its budgets, as its memory
// plan counts it (memlimit.Own; more under passthrough, where chunk files
// are kept beside the budgets): zfuse bench holds its mounts to it.
func (f *loaderFlags) ownMemory() int64 {
	return memlimit.Own(f.serving == fusemount.Passthrough, readahead.FreeFileBytes)
}

// A modeFlag is the --decoder flag: a gpu.Mode that only takes valid values.
type modeFlag gpu.Mode

func (m *modeFlag) String() string { return string(*m) }

func (m *modeFlag) Set(s string) error {
	v, err := gpu.ParseMode(s)
	if err != nil {
		return err
	}
	*m = modeFlag(v)
	return nil
}

// decoders are what decode chunks: a CPU pool of --workers and the router
// that sends batches to it or to the GPU (--decoder).
type decoders struct {
	pool   *codec.Pool
	router *gpu.Router
	// --metrics' hooks the loader calls (nil without): each batch decoded,
	// timed, and each chunk read served.
	decoded func(*zarr.Array, readahead.Route, time.Duration)
	served  func(n int64, err error)
}

// decoders starts the CPU pool and, unless --decoder cpu, opens the GPU.
// With --decoder gpu and no usable GPU it returns an error saying why.
// The choice is logged at Info (zfuse mount), or at Debug when quiet (the
// other commands; zfuse info's DECODER column says it in short), except
// that a GPU that is there and fails is a Warn line for every command.
// Close stops both, after the loader using them. log may be nil.
func (f *loaderFlags) decoders(log *slog.Logger, quiet bool) (*decoders, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	glog, level := log, slog.LevelInfo
	if quiet {
		glog, level = nil, slog.LevelDebug // the decoder's own lines: discarded
	}
	pool := codec.NewPool(f.workers, codec.WithPrefault())
	r, err := gpu.NewRouter(f.decoder, gpu.Config{Log: glog}, pool, 0)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w (--decoder auto or cpu decodes on the CPU)", err)
	}
	ctx := context.Background()
	switch g, why := r.GPU(), r.NoGPU(); {
	case g != nil:
		log.Log(ctx, level, "decoding LZ4 and Blosc-LZ4 on the GPU", "device", g.Device().String(), "decoder", string(f.decoder))
	case why != nil && gpu.Absent(why):
		log.Log(ctx, level, "no GPU: LZ4 and Blosc-LZ4 decode on the CPU", "why", gpu.Reason(why))
	case why != nil:
		log.Warn("the GPU does not work: LZ4 and Blosc-LZ4 decode on the CPU", "err", why)
	}
	return &decoders{pool: pool, router: r}, nil
}

// Close closes the GPU, if open, and stops the CPU pool.
func (d *decoders) Close() {
	d.router.Close()
	d.pool.Close()
}

// route returns the batch decoder of a's chunks, the GPU or the CPU pool,
// as the router decides from a's codec and compressor configuration, and
// says which and why: the loader's Config.Decoder, which
// readahead.RouteOf asks of arrays that need a batch decoder.
func (d *decoders) route(a *zarr.Array) readahead.Route {
	b, decoder, why := d.router.Route(a.Decoder(), a.Compressor())
	return readahead.Route{Decoder: decoder, Why: why, Batch: b}
}

// loader returns the chunk loader over s, decoding with dec, and a
// function that stops it (dec stays open).
func (f *loaderFlags) loader(s store.Store, dec *decoders, log *slog.Logger) (*readahead.Loader, func()) {
	l := readahead.New(readahead.Config{
		Store:            s,
		Decoder:          dec.route,
		Decoded:          dec.decoded,
		Served:           dec.served,
		DecodedBudget:    int64(f.decoded),
		CompressedBudget: int64(f.compressed),
		ReadaheadBudget:  int64(f.readahead),
		Changing:         f.changing,
		Log:              log,
	})
	return l, func() { l.Close() }
}
