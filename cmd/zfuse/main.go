// Command zfuse mounts a compressed Zarr store read-only and serves it as an
// uncompressed one.
//
//	zfuse mount [flags] SOURCE MOUNTPOINT   serve SOURCE at MOUNTPOINT until SIGINT/SIGTERM
//	zfuse cat [flags] SOURCE PATH           print one file exactly as the mount serves it
//	zfuse info [flags] SOURCE               list the arrays and how each is presented
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
	"runtime"
	"syscall"

	"github.com/zfuse/zfuse/cache"
	"github.com/zfuse/zfuse/fs"
	"github.com/zfuse/zfuse/store"
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
	fl := flag.NewFlagSet("zfuse "+cmd, flag.ContinueOnError)
	fl.SetOutput(stderr)
	level := fl.String("log-level", "info", "log level: debug, info, warn or error")
	workers := fl.Int("workers", runtime.GOMAXPROCS(0), "chunks decoded at once")
	budget := cache.Size(256 << 20)
	fl.Var(&budget, "cache", "decoded-chunk cache budget (e.g. 256MiB, 1GiB)")
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
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	src, err := store.Dir(fl.Arg(0))
	if err != nil {
		return err
	}
	defer src.Close()
	tree := fs.New(fs.Config{Store: src, CacheBytes: int64(budget), Workers: *workers, Log: log})
	switch cmd {
	case "mount":
		return mount(ctx, log, tree, fl.Arg(0), fl.Arg(1), lv <= slog.LevelDebug)
	case "cat":
		return cat(ctx, stdout, tree, fl.Arg(1))
	}
	return info(ctx, stdout, tree)
}
