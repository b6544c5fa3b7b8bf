// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one. Its commands (mount, cat, info, warmup, compress, bench,
// csi, version, help) are usage.go's commands, which zfuse help lists with
// what each does; "zfuse SOURCE MOUNTPOINT -o OPTIONS" is the form mount.fuse3
// runs for fstab's type fuse.zfuse (options.go).
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

	"github.com/zfuse/zfuse/daemon"
	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/memlimit"
	"github.com/zfuse/zfuse/internal/version"
	"github.com/zfuse/zfuse/metrics"
	"github.com/zfuse/zfuse/mountlib"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/diskcache"
	"github.com/zfuse/zfuse/tree"
)

// child is the pipe to the parent when this process is the background
// child of zfuse mount --background (package daemon); nil otherwise.
var child *daemon.Pipe

func main() {
	if code, ok := mountlib.StatProbe(os.Args); ok { // this process stats a mountpoint for a mount
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	child = daemon.Child()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		child.Fail(err)
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
		_, err := fmt.Fprintln(stdout, "zfuse", version.String())
		return err
	case "bench":
		return runBench(ctx, args, stdout, stderr) // bench.go: internal/bench, and its FUSE floor
	case "warmup":
		return runWarmup(ctx, args, stdout, stderr) // warmup.go
	case "compress":
		return runCompress(ctx, args, stdout, stderr) // compress.go
	case "csi":
		return runCSI(args, stdout, stderr) // csi.go: the CSI node plugin, zfuse-csi
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
// and info. Each command defines only the flags it uses: the mount's
// lifecycle (--background, --metrics, --stats-file, --allow-other, ...)
// is mount's alone, the memory plan, --serving and --transport are
// mount's and info's (info prints what a mount would use).
type treeFlags struct {
	fl                        *flag.FlagSet
	level                     levelFlag
	asV2, asNpy, asNc         boolFlag
	layout                    layoutFlag
	allowOther, allowNonEmpty boolFlag
	lf                        *loaderFlags
	mf                        *memoryFlags
	sf                        *sourceFlags
	bg                        *backgroundFlags
	statsFile, metricsAddr    string
}

// parseTreeFlags defines and parses the flags of cmd, which takes nargs
// arguments.
func parseTreeFlags(cmd string, nargs int, args []string, stdout io.Writer) (*treeFlags, error) {
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	f := &treeFlags{fl: fl, level: levelFlag(slog.LevelInfo), mf: &memoryFlags{}}
	fl.Var(&f.level, "log-level", "log level, `debug|info|warn|error`")
	fl.Var(&f.asV2, "as-v2", "present Zarr v3 groups and arrays as Zarr v2 (.zgroup, .zarray, v2 chunk keys) for v2-only readers; v3 arrays with no v2 equivalent are not shown")
	fl.Var(&f.asNpy, "as-npy", "present every array PARENT/NAME as one NumPy file PARENT/NAME.npy (header and the whole decoded array, for np.load(mmap_mode='r'), dd, pread) with its attributes in PARENT/NAME.json; an array at the root of SOURCE is named after SOURCE; arrays with no fixed-size raw layout are not shown")
	fl.Var(&f.asNc, "as-nc", "present every group PARENT/NAME as one netCDF classic file PARENT/NAME.nc (CDF-2, or CDF-5 where types or sizes need it) holding its arrays as variables, for ncdump, CDO, NCO and netCDF-C/Fortran codes; the root group, or an array at the root, is named after SOURCE; arrays with no netCDF type are left out")
	fl.Var(&f.layout, "layout", "`stored|native`: native presents every array in C order, little-endian (metadata rewritten to say so, chunks converted while decoded), for readers that ignore \"order\": \"F\" or big-endian dtypes (netCDF-C's NCZarr); the Zarr and .npy views")
	f.lf = addDecodeFlags(fl)  // mount.go: --workers, --decoder, the budgets
	f.sf = addSourceFlags(fl)  // source.go: http(s):// and s3:// SOURCE
	f.sf.addDiskCacheFlags(fl) // source.go: --cache-dir
	f.bg = addLogFileFlag(fl)  // background.go: --log-file
	if cmd != "cat" {
		f.lf.addServingFlags(fl)  // mount.go: --serving, --transport
		f.mf = addMemoryFlags(fl) // memory.go: --memory-limit
	}
	if cmd == "mount" {
		f.addMountFlags(fl)
	}
	opts := "mount options, `opt[=value],...`: the flags of this command spelled with _ (cache_decoded=2GiB,as_v2), and mount(8)'s generic ones (ro, nodev, _netdev, ...), which are ignored"
	if cmd == "mount" {
		opts += "; a mountpoint that holds files is refused unless allow_non_empty (an fstab line's options are these)"
	}
	fl.Var(optionsFlag{fl}, "o", opts)                          // options.go
	if err := parseFlags(fl, args, nargs, stdout); err != nil { // usage.go
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

// addMountFlags defines the flags only zfuse mount takes: how the mount
// is served and run.
func (f *treeFlags) addMountFlags(fl *flag.FlagSet) {
	f.lf.addMountFlags(fl)      // mount.go: --transport, --kernel-readahead, --cpu-profile
	f.sf.addRefreshFlag(fl)     // source.go: --refresh
	f.bg.addBackgroundFlags(fl) // background.go: --background, -d
	fl.StringVar(&f.statsFile, "stats-file", "", "mount: write the readahead and cache counters as JSON to this file on SIGUSR1 and at unmount")
	fl.StringVar(&f.metricsAddr, "metrics", "", "mount: serve Prometheus metrics at http://`ADDR`/metrics (e.g. 127.0.0.1:9464)")
	fl.Var(&f.allowOther, "allow-other", "mount: let other users read the mount (FUSE allow_other; for non-root mounts, user_allow_other in /etc/fuse.conf)")
	fl.Var(&f.allowNonEmpty, "allow-non-empty", "mount: mount over a directory that holds files, hiding them while mounted (refused by default; in fstab: the option allow_non_empty)")
}

// runTree opens the source of mount, cat or info, builds its tree and
// runs the command on it.
func runTree(ctx context.Context, cmd string, f *treeFlags, args []string, stdout, stderr io.Writer) error {
	fl, lf, sf := f.fl, f.lf, f.sf
	var plan *memlimit.Plan
	if cmd != "cat" {
		p, err := planMemory(cmd, fl, lf, f.mf, os.DirFS("/")) // memory.go: fit the budgets to the memory limit
		if err != nil {
			return err
		}
		plan = p
	}
	if cmd == "mount" && f.bg.background && child == nil {
		return daemon.Start(ctx, append([]string{"mount"}, args...), f.bg.logFile, stderr)
	}
	log, closeLog, err := openLog(stderr, slog.Level(f.level), f.bg, child)
	if err != nil {
		return err
	}
	defer closeLog()
	if cmd == "mount" {
		logPlan(log, plan) // the first line: the limit found and the budgets chosen
	}
	m := f.registry()
	backend := store.Backend(fl.Arg(0))
	sf.onRetry, sf.hook = m.Retried(backend), m.StoreHook(backend)
	src, err := store.Open(ctx, fl.Arg(0), sf.options(log))
	if err != nil {
		return err
	}
	dec, err := lf.decoders(log, cmd != "mount")
	if err != nil {
		src.Close()
		return err
	}
	defer dec.Close()
	dec.decoded, dec.served = m.Decoded(), m.ChunkRead()
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
	tr := tree.New(tree.Config{Store: src, Chunks: loader, Log: log, AsV2: bool(f.asV2), AsNpy: bool(f.asNpy),
		AsNc: bool(f.asNc), Native: f.layout == "native", RootName: tree.RootNameOf(fl.Arg(0)), Refresh: sf.refresh,
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
	return printPlan(stdout, plan)
}

// registry returns the metrics registry of --metrics; nil without it,
// whose hooks are nil.
func (f *treeFlags) registry() *metrics.Registry {
	if f.metricsAddr == "" {
		return nil
	}
	return metrics.New()
}

// runMount serves tree at the mount point until ctx ends or someone
// unmounts it, with the pressure watcher and metrics around the mount.
func runMount(ctx context.Context, f *treeFlags, log *slog.Logger, tr *tree.Tree, plan *memlimit.Plan, m *metrics.Registry, dec *decoders, loader *readahead.Loader, disk *diskcache.Store) error {
	fl, lf := f.fl, f.lf
	if err := needArrays(ctx, tr, fl.Arg(0)); err != nil {
		if f.sf.refresh <= 0 {
			return err
		}
		log.Warn("mounted all the same: with --refresh, arrays may appear", "err", err)
	}
	pw := memlimit.NewWatcher(plan, os.DirFS("/"), loader, log) // shed the caches under memory pressure
	defer pw.Stop()
	m.Watch(loader.Stats, dec.router.GPU(), disk)
	m.WatchMemory(pw.Stats)
	stopMetrics, err := m.Serve(ctx, f.metricsAddr, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	err = mountlib.Mount(ctx, mountlib.Config{
		Source: fl.Arg(0), Dir: fl.Arg(1), Tree: tr, Log: log,
		FUSE: fusemount.Config{Debug: slog.Level(f.level) <= slog.LevelDebug, KernelReadahead: int64(lf.kernelReadahead),
			Serving: lf.serving, Transport: lf.transport, AllowOther: bool(f.allowOther)},
		AllowNonEmpty: bool(f.allowNonEmpty),
		MemLimit:      plan.SoftLimit(plan.Budgets, lf.serving == fusemount.Passthrough),
		StatsFile:     f.statsFile, Stats: loader.Stats, GPU: dec.router.GPU(),
		StartProfile: func() (func(), error) { return startCPUProfile(lf.cpuProfile) },
		Mounted:      func(srv *fusemount.Server) { m.Served(srv); pw.Start(srv.Serving() == fusemount.Passthrough) },
		Ready:        child.Ready,
	})
	if err != nil && child != nil {
		log.Error("mount failed", "err", err) // the parent may be gone
	}
	return err
}
