package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
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
	f.addServingFlag(fl)
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

// addServingFlag defines --serving: mount's, and info's, which says what
// a mount would get.
func (f *loaderFlags) addServingFlag(fl *flag.FlagSet) {
	fl.Var(&f.serving, "serving", "mount: how chunk bytes reach readers, `auto|no-open|passthrough|open`: no-open (the kernel's page cache: one READ per chunk, no OPEN), passthrough (the kernel reads memfds the chunks were decoded into, or the stored files of chunks stored uncompressed; needs root and Linux 6.9), open (OPEN and READ through the daemon, the last fallback); auto is no-open where the kernel offers it; a path refused falls back to the next (default $ZFUSE_SERVING, else auto)")
}

// addMountFlags defines the loader's flags that only a mount uses.
func (f *loaderFlags) addMountFlags(fl *flag.FlagSet) {
	fl.Var(&f.kernelReadahead, "kernel-readahead", "mount: the kernel's readahead for the mount, set when running as root; 0 leaves the kernel default")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "mount: write a CPU profile of the whole mount to this file, for go tool pprof")
	fl.Var(&f.transport, "transport", "mount: how FUSE requests reach zfuse, `auto|uring|dev`: uring (FUSE over io_uring, each request answered on the CPU that made it: Linux 6.14+, once root enabled it with echo Y > /sys/module/fuse/parameters/enable_uring), dev (/dev/fuse); auto is uring where the kernel offers it; uring falls back to dev where it cannot be had (default $ZFUSE_TRANSPORT, else auto)")
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

// memory is what a mount of these budgets may hold, zfuse bench's target
// for its peak RSS and memfds: the three budgets and the mount's own
// memory, as its memory plan counts it (memlimit.Own; more under
// passthrough, where chunk files are kept beside the budgets).
func (f *loaderFlags) memory() int64 {
	return int64(f.decoded) + int64(f.compressed) + int64(f.readahead) + f.ownMemory()
}

// ownMemory is the mount's own memory beside its budgets (memlimit.Own).
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

// mountOpts are what mount needs besides the tree.
type mountOpts struct {
	debug           bool                    // log every FUSE request
	statsFile       string                  // "": no stats file
	stats           func() readahead.Stats  // the counters
	serving         fusemount.Serving       // the serving path asked for
	transport       fusemount.Transport     // the transport asked for
	memLimit        int64                   // soft memory limit unless GOMEMLIMIT is set; 0: none
	kernelReadahead int64                   // bytes; 0 leaves the kernel's default
	cpuProfile      string                  // "": no CPU profile
	gpu             *gpu.Decoder            // nil: no GPU; else its counters are logged at unmount
	ready           func()                  // nil, or called once the mount is ready (--background)
	mounted         func(*fusemount.Server) // nil, or called with the server once mounted (metrics)
	allowOther      bool                    // FUSE allow_other
	allowNonEmpty   bool                    // mount over a directory that holds files
}

// mount serves tree at dir until ctx ends (SIGINT/SIGTERM) or someone
// unmounts it (fusermount3 -u), then logs the counters and returns nil.
// With o.statsFile, the counters are written there as JSON on SIGUSR1 and
// at unmount.
func mount(ctx context.Context, log *slog.Logger, tr *tree.Tree, source, dir string, o mountOpts) error {
	if err := checkStatsFile(o.statsFile); err != nil {
		return err
	}
	if err := checkMountpoint(log, dir, o.allowNonEmpty); err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && o.memLimit > 0 {
		debug.SetMemoryLimit(o.memLimit)
		log.Debug("soft memory limit", "bytes", o.memLimit)
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	// SIGUSR1 is caught from before the mount is announced: a SIGUSR1
	// sent on seeing "mounted" must write the stats file, not be lost
	// (or, uncaught, end the process).
	usr1 := make(chan os.Signal, 1)
	if o.statsFile != "" {
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
	}
	name := displaySource(source)
	srv, err := fusemount.Mount(ctx, dir, tr, fusemount.Config{FsName: name, Debug: o.debug, KernelReadahead: o.kernelReadahead, Serving: o.serving, Transport: o.transport, AllowOther: o.allowOther})
	if err != nil {
		return err
	}
	if o.mounted != nil {
		o.mounted(srv)
	}
	log.Info("mounted", "source", name, "mountpoint", dir)
	if o.ready != nil {
		o.ready()
	}
	serveUntil(ctx, log, srv, dir, o, usr1)
	st, ss := o.stats(), srv.Stats()
	logUnmounted(log, dir, st, ss)
	if o.gpu != nil {
		log.Info("GPU decoder", "stats", o.gpu.Stats())
	}
	if o.statsFile != "" {
		if err := writeStats(o.statsFile, st, ss); err != nil {
			return err
		}
	}
	return nil
}

// logUnmounted logs the mount's last line: a short summary at Info, and
// every counter at Debug (and in the stats file, for --stats-file).
func logUnmounted(log *slog.Logger, dir string, st readahead.Stats, ss fusemount.ServeStats) {
	var requests int64
	for _, n := range ss.Requests {
		requests += n
	}
	log.Info("unmounted", "mountpoint", dir, "chunk_reads", st.Reads, "decoded_hits", st.DecodedHits,
		"prefetch_used", st.PrefetchUsed, "store_reads", st.StoreReads, "fuse_requests", requests, "errors", ss.DecodeErrors)
	log.Debug("unmounted: the counters", "mountpoint", dir, "stats", st, "serve", ss)
}

// serveUntil waits until srv is unmounted, or until ctx ends and then
// unmounts it (unless the parent that mounted it does), writing the stats
// file on each SIGUSR1 (usr1) meanwhile.
func serveUntil(ctx context.Context, log *slog.Logger, srv *fusemount.Server, dir string, o mountOpts, usr1 <-chan os.Signal) {
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	for {
		select {
		case <-usr1:
			if err := writeStats(o.statsFile, o.stats(), srv.Stats()); err != nil {
				log.Warn("cannot write the stats file", "err", err)
			}
		case <-done:
			return
		case <-ctx.Done():
			if passedFuseFd(dir) {
				return // the parent mounted it, and unmounts it: stop serving
			}
			unmount(log, srv, dir, done)
			return
		}
	}
}

// checkStatsFile refuses a --stats-file that could not be written, before
// mounting (as --log-file and --metrics are refused): it is written at
// unmount, too late to learn that its directory is missing.
func checkStatsFile(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--stats-file %s is a directory", path)
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("--stats-file %s: cannot write in %s: %w", path, dir, err)
	}
	return nil
}

// A statsDoc is what --stats-file holds.
type statsDoc struct {
	Time       time.Time            `json:"time"`
	Pid        int                  `json:"pid"`
	Goroutines int                  `json:"goroutines"` // when written: a leak shows as growth between two
	Stats      readahead.Stats      `json:"stats"`
	Serve      fusemount.ServeStats `json:"serve"`
}

// writeStats writes s to path as JSON, atomically: readers see the old
// file or the new one, never half of one.
func writeStats(path string, s readahead.Stats, ss fusemount.ServeStats) error {
	b, err := json.MarshalIndent(statsDoc{Time: time.Now(), Pid: os.Getpid(), Goroutines: runtime.NumGoroutine(), Stats: s, Serve: ss}, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	return nil
}

// unmount unmounts the server and waits until it has stopped. Unmounting
// fails while a process uses the mount (EBUSY): say so once, and keep
// trying until it is free.
func unmount(log *slog.Logger, srv interface{ Unmount() error }, dir string, done <-chan struct{}) {
	for warned := false; ; warned = true {
		err := srv.Unmount()
		if err == nil {
			break
		}
		if !warned {
			log.Warn("cannot unmount yet: the mountpoint is busy; close files and leave directories under it", "mountpoint", dir, "err", err)
		}
		select {
		case <-done: // unmounted by someone else
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	<-done
}

// passedFuseFd reports whether dir is /dev/fd/N: a /dev/fuse descriptor
// that a privileged parent mounted (see checkMountpoint).
func passedFuseFd(dir string) bool {
	n, ok := strings.CutPrefix(dir, "/dev/fd/")
	fd, err := strconv.Atoi(n)
	return ok && err == nil && fd > 0
}
