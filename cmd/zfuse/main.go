// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one.
//
//	zfuse mount [flags] SOURCE MOUNTPOINT   serve SOURCE at MOUNTPOINT until SIGINT/SIGTERM
//	zfuse cat [flags] SOURCE PATH           print one file exactly as the mount serves it
//	zfuse info [flags] SOURCE               list the arrays and how each is presented
//	zfuse warmup [flags] MOUNTPOINT/PATH    decode an array, group or slice into a mount's caches
//	zfuse compress [flags] SOURCE DEST      write SOURCE's arrays as a compressed store
//	zfuse bench [flags]                     measure the mount against baselines on this machine
//	zfuse version                           print the version
//	zfuse help [COMMAND]                    print the usage, or a command's flags
//	zfuse SOURCE MOUNTPOINT -o OPTIONS      mount in the background, as mount.fuse3 runs it (fstab: type fuse.zfuse)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zfuse/zfuse/fs"
)

// daemon is the pipe to the parent when this process is the background
// child of zfuse mount --background (background.go); nil otherwise.
var daemon *parentPipe

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	daemon = backgroundChild()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		daemon.fail(err)
	}
	stop()
	os.Exit(exitStatus(os.Stderr, err)) // usage.go: 0, 1, or 2 for bad usage
}

// run is the whole program: ctx ends on SIGINT/SIGTERM.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{usage: usage()}
	}
	if h, ok, err := helperArgs(args, commandNames()); ok { // options.go
		if err != nil {
			return err
		}
		args = h
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		return help(stdout, args, func(cmd string) error { return run(ctx, []string{cmd, "-h"}, stdout, stderr) })
	case "version", "-version", "--version":
		if len(args) != 0 {
			return badUsage("version", "version takes no arguments")
		}
		_, err := fmt.Fprintln(stdout, "zfuse", version())
		return err
	case "bench":
		if len(args) > 0 && args[0] == "compress" { // bench_compress.go
			return benchCompress(ctx, args[1:], stdout, stderr)
		}
		if len(args) > 0 && args[0] == "floor" { // bench_floor.go: the bench's own FUSE floor
			return benchFloor(ctx, args[1:], stdout, stderr)
		}
		return bench(ctx, args, stdout, stderr)
	case "warmup":
		return warmup(ctx, args, stdout, stderr) // warmup.go
	case "compress":
		return compress(ctx, args, stdout, stderr) // compress.go
	}
	nargs := map[string]int{"mount": 2, "cat": 2, "info": 1}[cmd]
	if nargs == 0 {
		return badUsage("", "unknown command %q", cmd)
	}
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	level := levelFlag(slog.LevelInfo)
	fl.Var(&level, "log-level", "log level, `debug|info|warn|error`")
	var asV2, asNpy, allowOther boolFlag
	fl.Var(&asV2, "as-v2", "present Zarr v3 groups and arrays as Zarr v2 (.zgroup, .zarray, v2 chunk keys) for v2-only readers; v3 arrays with no v2 equivalent are not shown")
	fl.Var(&asNpy, "as-npy", "present every array PARENT/NAME as one NumPy file PARENT/NAME.npy (header and the whole decoded array, for np.load(mmap_mode='r'), dd, pread) with its attributes in PARENT/NAME.json; an array at the root of SOURCE is named after SOURCE; arrays with no fixed-size raw layout are not shown")
	lf := addLoaderFlags(fl)
	mf := addMemoryFlags(fl) // memory.go: --memory-limit
	sf := addSourceFlags(fl) // source.go: http(s):// and s3:// SOURCE
	statsFile := fl.String("stats-file", "", "mount: write the readahead and cache counters as JSON to this file on SIGUSR1 and at unmount")
	bg := addBackgroundFlags(fl) // background.go: --background, -d, --log-file
	metricsAddr := fl.String("metrics", "", "mount: serve Prometheus metrics at http://`ADDR`/metrics (e.g. 127.0.0.1:9464)")
	fl.Var(&allowOther, "allow-other", "mount: let other users read the mount (FUSE allow_other; for non-root mounts, user_allow_other in /etc/fuse.conf)")
	fl.Var(optionsFlag{fl}, "o", "mount options, `opt[=value],...`: the flags of this command spelled with _ (cache_decoded=2GiB,as_v2), and mount(8)'s generic ones (ro, nodev, _netdev, ...), which are ignored") // options.go
	if err := parseFlags(fl, args, nargs, stdout); err != nil {                                                                                                                                                     // usage.go
		return err
	}
	lf.forSource(fl, fl.Arg(0))
	if asV2 && asNpy {
		return badUsage(cmd, "--as-v2 and --as-npy are two views: choose one")
	}
	var plan *memoryPlan
	if cmd != "cat" {
		p, err := planMemory(cmd, fl, lf, mf, os.DirFS("/")) // memory.go: fit the budgets to the memory limit
		if err != nil {
			return err
		}
		plan = p
	}
	lv := slog.Level(level)
	if cmd == "mount" && bg.background && daemon == nil {
		return startBackground(ctx, append([]string{"mount"}, args...), bg.logFile, stderr) // background.go
	}
	log, closeLog, err := openLog(stderr, lv, bg, daemon)
	if err != nil {
		return err
	}
	defer closeLog()
	if cmd == "mount" {
		plan.logPlan(log) // the first line: the limit found and the budgets chosen
	}
	m := newMetrics(*metricsAddr) // metrics.go; nil without --metrics
	if cmd != "mount" {
		m = nil
	}
	sf.backoff = m.backoff(backendName(fl.Arg(0)))
	src, err := openSource(ctx, fl.Arg(0), sf, log)
	if err != nil {
		return err
	}
	src = m.store(src, backendName(fl.Arg(0)))
	dec, err := lf.decoders(log, cmd != "mount")
	if err != nil {
		src.Close()
		return err
	}
	defer dec.Close()
	dec.decoded = m.decoded()
	cached, disk, err := withDiskCache(src, fl.Arg(0), sf, log) // source.go: --cache-dir
	if err != nil {
		src.Close()
		return err
	}
	src = cached
	defer src.Close()
	lf.changing = sf.refresh > 0
	loader, closeLoader := lf.loader(src, dec, log)
	defer closeLoader()
	tree := fs.New(fs.Config{Store: src, Chunks: m.chunks(loader), Log: log, AsV2: bool(asV2), AsNpy: bool(asNpy),
		RootName: npyRootName(fl.Arg(0)), Refresh: sf.refresh})
	switch cmd {
	case "mount":
		if err := needArrays(ctx, tree, fl.Arg(0)); err != nil {
			if sf.refresh <= 0 {
				return err
			}
			log.Warn("mounted all the same: with --refresh, arrays may appear", "err", err)
		}
		pw := newPressureWatcher(plan, os.DirFS("/"), loader, log) // pressure.go: shed the caches under memory pressure
		defer pw.stop()
		m.watch(loader.Stats, dec.router.GPU(), disk)
		m.watchMemory(pw.stats)
		stopMetrics, err := m.serve(ctx, *metricsAddr, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
		mounted := func(srv *fs.Server) { m.served(srv); pw.start(srv.Serving() == fs.Passthrough) }
		err = mount(ctx, log, tree, fl.Arg(0), fl.Arg(1), mountOpts{
			debug: lv <= slog.LevelDebug, statsFile: *statsFile, stats: loader.Stats,
			memLimit: plan.softLimit(plan.budgets, lf.serving == fs.Passthrough), kernelReadahead: int64(lf.kernelReadahead), cpuProfile: lf.cpuProfile, serving: lf.serving,
			gpu: dec.router.GPU(), ready: daemon.ready, mounted: mounted, allowOther: bool(allowOther)})
		if err != nil && daemon != nil {
			log.Error("mount failed", "err", err) // the parent may be gone
		}
		return err
	case "cat":
		return cat(ctx, stdout, tree, fl.Arg(1))
	}
	if err := info(ctx, stdout, tree, dec, lf.serving, fl.Arg(0), viewFlag(bool(asV2), bool(asNpy))); err != nil {
		return err
	}
	return plan.print(stdout)
}
