// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one.
//
//	zfuse mount [flags] SOURCE MOUNTPOINT   serve SOURCE at MOUNTPOINT until SIGINT/SIGTERM
//	zfuse cat [flags] SOURCE PATH           print one file exactly as the mount serves it
//	zfuse info [flags] SOURCE               list the arrays and how each is presented
//	zfuse compress [flags] SOURCE DEST      write SOURCE's arrays as a compressed store
//	zfuse bench [flags]                     measure the mount against baselines on this machine
//	zfuse version                           print the version
package main

import (
	"context"
	"errors"
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
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "zfuse:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage:
  zfuse mount [flags] SOURCE MOUNTPOINT
  zfuse cat [flags] SOURCE PATH
  zfuse info [flags] SOURCE
  zfuse compress [flags] SOURCE DEST
  zfuse bench [flags]
  zfuse bench compress [flags]
  zfuse version
Run "zfuse CMD -h" for a command's flags.`

// run is the whole program: ctx ends on SIGINT/SIGTERM.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	cmd, args := args[0], args[1:]
	if cmd == "version" {
		_, err := fmt.Fprintln(stdout, "zfuse", version())
		return err
	}
	if cmd == "bench" {
		if len(args) > 0 && args[0] == "compress" { // bench_compress.go
			return benchCompress(ctx, args[1:], stdout, stderr)
		}
		return bench(ctx, args, stdout, stderr)
	}
	if cmd == "compress" {
		return compress(ctx, args, stdout, stderr)
	}
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	fl.SetOutput(stderr)
	level := fl.String("log-level", "info", "log level: debug, info, warn or error")
	asV2 := fl.Bool("as-v2", false, "present Zarr v3 groups and arrays as Zarr v2 (.zgroup, .zarray, v2 chunk keys) for v2-only readers; v3 arrays with no v2 equivalent are not shown")
	lf := addLoaderFlags(fl)
	sf := addSourceFlags(fl) // source.go: http(s):// and s3:// SOURCE
	statsFile := fl.String("stats-file", "", "mount: write the readahead and cache counters as JSON to this file on SIGUSR1 and at unmount")
	nargs := map[string]int{"mount": 2, "cat": 2, "info": 1}[cmd]
	if nargs == 0 {
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != nargs {
		return fmt.Errorf("%s takes %d arguments, got %d\n%s", cmd, nargs, fl.NArg(), usage)
	}
	lf.forSource(fl, fl.Arg(0))
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
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
			memLimit: lf.memory(), kernelReadahead: int64(lf.kernelReadahead), cpuProfile: lf.cpuProfile,
			gpu: dec.router.GPU()})
	case "cat":
		return cat(ctx, stdout, tree, fl.Arg(1))
	}
	return info(ctx, stdout, tree, dec.router)
}
