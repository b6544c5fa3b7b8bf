// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one.
//
//	zfuse mount [flags] SOURCE MOUNTPOINT   serve SOURCE at MOUNTPOINT until SIGINT/SIGTERM
//	zfuse cat [flags] SOURCE PATH           print one file exactly as the mount serves it
//	zfuse info [flags] SOURCE               list the arrays and how each is presented
//	zfuse bench [flags]                     measure the mount against baselines on this machine
//	zfuse version                           print the version
//	zfuse help [COMMAND]                    print the usage, or a command's flags
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(os.Stderr, err)) // usage.go: 0, 1, or 2 for bad usage
}

// run is the whole program: ctx ends on SIGINT/SIGTERM.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{usage: usage()}
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
		return bench(ctx, args, stdout, stderr)
	}
	nargs := map[string]int{"mount": 2, "cat": 2, "info": 1}[cmd]
	if nargs == 0 {
		return badUsage("", "unknown command %q", cmd)
	}
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	level := fl.String("log-level", "info", "log level: debug, info, warn or error")
	asV2 := fl.Bool("as-v2", false, "present Zarr v3 groups and arrays as Zarr v2 (.zgroup, .zarray, v2 chunk keys) for v2-only readers; v3 arrays with no v2 equivalent are not shown")
	lf := addLoaderFlags(fl)
	sf := addSourceFlags(fl) // source.go: http(s):// and s3:// SOURCE
	statsFile := fl.String("stats-file", "", "mount: write the readahead and cache counters as JSON to this file on SIGUSR1 and at unmount")
	if err := parseFlags(fl, args, nargs, stdout); err != nil { // usage.go
		return err
	}
	lf.forSource(fl, fl.Arg(0))
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return badUsage(cmd, "--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	dec, err := lf.decoders(log, cmd != "mount")
	if err != nil {
		return err
	}
	defer dec.Close()
	src, err := openSource(ctx, fl.Arg(0), sf, log)
	if err != nil {
		return err
	}
	defer src.Close()
	loader, closeLoader := lf.loader(src, dec, log)
	defer closeLoader()
	tree := fs.New(fs.Config{Store: src, Chunks: loader, Log: log, AsV2: *asV2})
	switch cmd {
	case "mount":
		return mount(ctx, log, tree, fl.Arg(0), fl.Arg(1), mountOpts{
			debug: lv <= slog.LevelDebug, statsFile: *statsFile, stats: loader.Stats,
			memLimit: lf.memory(), kernelReadahead: int64(lf.kernelReadahead), cpuProfile: lf.cpuProfile, serving: lf.serving,
			gpu: dec.router.GPU()})
	case "cat":
		return cat(ctx, stdout, tree, fl.Arg(1))
	}
	return info(ctx, stdout, tree, dec.router, lf.serving)
}
