// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one.
//
//	zfuse mount [flags] SOURCE MOUNTPOINT   serve SOURCE at MOUNTPOINT until SIGINT/SIGTERM
//	zfuse cat [flags] SOURCE PATH           print one file exactly as the mount serves it
//	zfuse info [flags] SOURCE               list the arrays and how each is presented
//	zfuse warmup [flags] MOUNTPOINT/PATH    decode an array, group or slice into a mount's caches
//	zfuse compress [flags] SOURCE DEST      write SOURCE's arrays as a compressed store
//	zfuse bench [flags]                     measure the mount against baselines on this machine
//	zfuse csi [flags]                       serve the CSI node plugin for Kubernetes (package csidriver)
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
	"strings"
	"syscall"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/tree"
)

// daemon is the pipe to the parent when this process is the background
// child of zfuse mount --background (background.go); nil otherwise.
var daemon *parentPipe

func main() {
	if len(os.Args) == 3 && os.Args[1] == statProbe { // mountpoint.go: this process is statWithin's child
		os.Exit(probeStat(os.Args[2]))
	}
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
		return runBench(ctx, args, stdout, stderr)
	case "warmup":
		return warmup(ctx, args, stdout, stderr) // warmup.go
	case "compress":
		return compress(ctx, args, stdout, stderr) // compress.go
	case "csi":
		return runCSI(ctx, args, stdout, stderr) // csi.go: the CSI node plugin
	}
	nargs := map[string]int{"mount": 2, "cat": 2, "info": 1}[cmd]
	if nargs == 0 {
		return badUsage("", "unknown command %q", cmd)
	}
	f, err := parseTreeFlags(cmd, nargs, args, stdout)
	if err != nil {
		return err
	}
	return runTree(ctx, cmd, f, args, stdout, stderr)
}

// treeFlags are the flags of the commands that serve a tree: mount, cat
// and info.
type treeFlags struct {
	fl                      *flag.FlagSet
	level                   levelFlag
	asV2, asNpy, allowOther boolFlag
	asNc                    boolFlag
	layout                  layoutFlag
	lf                      *loaderFlags
	mf                      *memoryFlags
	sf                      *sourceFlags
	bg                      *backgroundFlags
	statsFile, metricsAddr  *string
}

// parseTreeFlags defines and parses the flags of cmd, which takes nargs
// arguments.
func parseTreeFlags(cmd string, nargs int, args []string, stdout io.Writer) (*treeFlags, error) {
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	f := &treeFlags{fl: fl, level: levelFlag(slog.LevelInfo)}
	fl.Var(&f.level, "log-level", "log level, `debug|info|warn|error`")
	fl.Var(&f.asV2, "as-v2", "present Zarr v3 groups and arrays as Zarr v2 (.zgroup, .zarray, v2 chunk keys) for v2-only readers; v3 arrays with no v2 equivalent are not shown")
	fl.Var(&f.asNpy, "as-npy", "present every array PARENT/NAME as one NumPy file PARENT/NAME.npy (header and the whole decoded array, for np.load(mmap_mode='r'), dd, pread) with its attributes in PARENT/NAME.json; an array at the root of SOURCE is named after SOURCE; arrays with no fixed-size raw layout are not shown")
	fl.Var(&f.asNc, "as-nc", "present every group PARENT/NAME as one netCDF classic file PARENT/NAME.nc (CDF-2, or CDF-5 where types or sizes need it) holding its arrays as variables, for ncdump, CDO, NCO and netCDF-C/Fortran codes; the root group, or an array at the root, is named after SOURCE; arrays with no netCDF type are left out")
	fl.Var(&f.layout, "layout", "`stored|native`: native presents every array in C order, little-endian (metadata rewritten to say so, chunks converted while decoded), for readers that ignore \"order\": \"F\" or big-endian dtypes (netCDF-C's NCZarr); the Zarr and .npy views")
	f.lf = addLoaderFlags(fl)
	f.mf = addMemoryFlags(fl) // memory.go: --memory-limit
	f.sf = addSourceFlags(fl) // source.go: http(s):// and s3:// SOURCE
	f.statsFile = fl.String("stats-file", "", "mount: write the readahead and cache counters as JSON to this file on SIGUSR1 and at unmount")
	f.bg = addBackgroundFlags(fl) // background.go: --background, -d, --log-file
	f.metricsAddr = fl.String("metrics", "", "mount: serve Prometheus metrics at http://`ADDR`/metrics (e.g. 127.0.0.1:9464)")
	fl.Var(&f.allowOther, "allow-other", "mount: let other users read the mount (FUSE allow_other; for non-root mounts, user_allow_other in /etc/fuse.conf)")
	fl.Var(optionsFlag{fl}, "o", "mount options, `opt[=value],...`: the flags of this command spelled with _ (cache_decoded=2GiB,as_v2), and mount(8)'s generic ones (ro, nodev, _netdev, ...), which are ignored") // options.go
	if err := parseFlags(fl, args, nargs, stdout); err != nil {                                                                                                                                                     // usage.go
		return nil, err
	}
	f.lf.forSource(fl, fl.Arg(0))
	if btoi(bool(f.asV2))+btoi(bool(f.asNpy))+btoi(bool(f.asNc)) > 1 {
		return nil, badUsage(cmd, "--as-v2, --as-npy and --as-nc are three views: choose one")
	}
	if f.asNc && f.layout == "native" {
		return nil, badUsage(cmd, "--layout native is for the Zarr and .npy views: a netCDF file is always big-endian, in C order")
	}
	return f, nil
}

// runTree opens the source of mount, cat or info, builds its tree and
// runs the command on it.
func runTree(ctx context.Context, cmd string, f *treeFlags, args []string, stdout, stderr io.Writer) error {
	fl, lf, sf := f.fl, f.lf, f.sf
	var plan *memoryPlan
	if cmd != "cat" {
		p, err := planMemory(cmd, fl, lf, f.mf, os.DirFS("/")) // memory.go: fit the budgets to the memory limit
		if err != nil {
			return err
		}
		plan = p
	}
	if cmd == "mount" && f.bg.background && daemon == nil {
		return startBackground(ctx, append([]string{"mount"}, args...), f.bg.logFile, stderr) // background.go
	}
	log, closeLog, err := openLog(stderr, slog.Level(f.level), f.bg, daemon)
	if err != nil {
		return err
	}
	defer closeLog()
	if cmd == "mount" {
		plan.logPlan(log) // the first line: the limit found and the budgets chosen
	}
	m := newMetrics(*f.metricsAddr) // metrics.go; nil without --metrics
	if cmd != "mount" {
		m = nil
	}
	sf.backoff, sf.hook = m.backoff(backendName(fl.Arg(0))), m.storeHook(backendName(fl.Arg(0)))
	src, err := openSource(ctx, fl.Arg(0), sf, log)
	if err != nil {
		return err
	}
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
	tr := tree.New(tree.Config{Store: src, Chunks: m.chunks(loader), Log: log, AsV2: bool(f.asV2), AsNpy: bool(f.asNpy),
		AsNc: bool(f.asNc), Native: f.layout == "native", RootName: npyRootName(fl.Arg(0)), Refresh: sf.refresh,
		TrustConsolidated: strings.Contains(fl.Arg(0), "://")})
	switch cmd {
	case "mount":
		return runMount(ctx, f, log, tr, plan, m, dec, loader, disk)
	case "cat":
		return cat(ctx, stdout, tr, fl.Arg(1))
	}
	if err := info(ctx, stdout, tr, dec, lf.serving, lf.transport, fl.Arg(0), viewFlag(bool(f.asV2), bool(f.asNpy), bool(f.asNc))); err != nil {
		return err
	}
	return plan.print(stdout)
}

// runMount serves tree at the mount point until ctx ends or someone
// unmounts it, with the pressure watcher and metrics around the mount.
func runMount(ctx context.Context, f *treeFlags, log *slog.Logger, tr *tree.Tree, plan *memoryPlan, m *metrics, dec *decoders, loader *readahead.Loader, disk *diskcache.Store) error {
	fl, lf := f.fl, f.lf
	if err := needArrays(ctx, tr, fl.Arg(0)); err != nil {
		if f.sf.refresh <= 0 {
			return err
		}
		log.Warn("mounted all the same: with --refresh, arrays may appear", "err", err)
	}
	pw := newPressureWatcher(plan, os.DirFS("/"), loader, log) // pressure.go: shed the caches under memory pressure
	defer pw.stop()
	m.watch(loader.Stats, dec.router.GPU(), disk)
	m.watchMemory(pw.stats)
	stopMetrics, err := m.serve(ctx, *f.metricsAddr, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	mounted := func(srv *fusemount.Server) { m.served(srv); pw.start(srv.Serving() == fusemount.Passthrough) }
	err = mount(ctx, log, tr, fl.Arg(0), fl.Arg(1), mountOpts{
		debug: slog.Level(f.level) <= slog.LevelDebug, statsFile: *f.statsFile, stats: loader.Stats,
		memLimit: plan.softLimit(plan.budgets, lf.serving == fusemount.Passthrough), kernelReadahead: int64(lf.kernelReadahead), cpuProfile: lf.cpuProfile, serving: lf.serving, transport: lf.transport,
		gpu: dec.router.GPU(), ready: daemon.ready, mounted: mounted, allowOther: bool(f.allowOther)})
	if err != nil && daemon != nil {
		log.Error("mount failed", "err", err) // the parent may be gone
	}
	return err
}
