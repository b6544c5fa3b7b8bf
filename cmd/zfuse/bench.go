package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/fusemount/floor"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/bench"
)

// zfuse bench is the harness of internal/bench: this file is its flags,
// those of zfuse bench compress, and of zfuse bench floor, the FUSE floor
// (fusemount/floor) the harness runs as a process of its own.

// runBench is zfuse bench [compress|floor] [flags].
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "compress" {
		cfg, err := parseBenchCompress(args[1:], stdout, stderr)
		if err != nil {
			return err
		}
		return bench.RunCompress(ctx, cfg, stdout)
	}
	if len(args) > 0 && args[0] == "floor" {
		return benchFloor(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parseBench(args, stdout, stderr)
	if err != nil {
		return err
	}
	return bench.Run(ctx, cfg)
}

// parseBench parses the flags of zfuse bench.
func parseBench(args []string, stdout, stderr io.Writer) (bench.Config, error) {
	fl := flag.NewFlagSet("zfuse bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cfg := bench.Config{Out: stdout, Progress: stderr, Runs: 3, Epochs: 3, Latency: 20 * time.Millisecond}
	lf := addLoaderFlags(fl)
	size := Size(256 << 20)
	fl.StringVar(&cfg.Stores, "store", "", "read the stores written by an earlier run (with --keep) in this directory instead of writing new ones")
	fl.StringVar(&cfg.Dir, "dir", "", "where to write the stores, in a subdirectory per chunk size (default: a new directory in $TMPDIR); without --keep only what the run wrote there is removed")
	fl.Var((*boolFlag)(&cfg.Keep), "keep", "keep the stores written, for --store")
	fl.Var(&size, "size", "decoded size of each array written (planes of 4 MiB)")
	fl.StringVar(&cfg.Python, "python", "/usr/bin/python3", "Python with zarr 2.13, numcodecs 0.11 and torch")
	fl.Var((*countFlag)(&cfg.Runs), "runs", "rounds of the whole matrix; the table shows the median and the range")
	fl.Var((*countFlag)(&cfg.Epochs), "epochs", "epochs each reader reads in one mount (epoch 1 is cold)")
	fl.Var((*durationFlag)(&cfg.Latency), "latency", "zarr-http: the time the bench's HTTP server waits before answering each request")
	one := func(words ...string) func(string) error {
		return func(s string) error { return choice(new(string), words...).Set(s) }
	}
	listFlag(fl, "readers", strings.Join(bench.Readers, ","), "readers to run, comma-separated", &cfg.Readers, one(bench.Readers...))
	listFlag(fl, "codecs", "blosc,zstd", "compressed stores to read, comma-separated", &cfg.Codecs, one("blosc", "zstd"))
	listFlag(fl, "chunks", "1MiB,64KiB", "chunk sizes, comma-separated (square planes of float32: 1MiB is 512x512, 64KiB 128x128)", &cfg.ChunkSizes,
		func(s string) error { _, err := bench.ChunkSide(s); return err })
	listFlag(fl, "servings", "auto", "serving paths to mount with, comma-separated: each reader's mount is repeated on each", &cfg.Servings,
		func(s string) error { _, err := fusemount.ParseServing(s); return err })
	listFlag(fl, "transports", "auto", "FUSE transports to mount with (auto, uring, dev), comma-separated: each reader's mount is repeated on each; the floor uses the first", &cfg.Transports,
		func(s string) error { _, err := fusemount.ParseTransport(s); return err })
	if err := parseFlags(fl, args, 0, stdout); err != nil { // usage.go: help to stdout, bad usage exits 2
		return cfg, err
	}
	cfg.Size, cfg.Mount = int64(size), lf.benchFlags()
	return cfg, nil
}

// benchFlags are the loader's and the mount's flags as zfuse bench gives
// them to its mounts, and what it says of them.
func (f *loaderFlags) benchFlags() bench.MountFlags {
	m := bench.MountFlags{Args: f.args(), Decoder: string(f.decoder), Workers: f.workers,
		Decoded: int64(f.decoded), Compressed: int64(f.compressed), Readahead: int64(f.readahead),
		KernelReadahead: int64(f.kernelReadahead), Own: f.ownMemory()}
	if f.decoder == gpu.GPU { // fail before the stores are written
		m.Check = func() error {
			dec, err := f.decoders(nil, true)
			if err == nil {
				dec.Close()
			}
			return err
		}
	}
	return m
}

// listFlag defines a comma-separated flag into *into, each of whose items
// check accepts.
func listFlag(fl *flag.FlagSet, name, def, usage string, into *[]string, check func(string) error) {
	*into = strings.Split(def, ",")
	fl.Func(name, usage+" (default "+def+")", func(s string) error {
		items := strings.Split(s, ",")
		for _, it := range items {
			if err := check(it); err != nil {
				return err
			}
		}
		*into = items
		return nil
	})
}

// parseBenchCompress parses the flags of zfuse bench compress.
func parseBenchCompress(args []string, stdout, stderr io.Writer) (bench.CompressConfig, error) {
	fl := flag.NewFlagSet("zfuse bench compress", flag.ContinueOnError)
	fl.SetOutput(stderr)
	size := Size(1 << 30)
	fl.Var(&size, "size", "decoded size of the array")
	rounds, workers := countFlag(3), countFlag(runtime.NumCPU())
	fl.Var(&rounds, "rounds", "rounds; each side's median and spread are reported")
	fl.Var(&workers, "workers", "zfuse's CPU workers; numcodecs gets as many Blosc threads")
	dir := fl.String("dir", "", "where the stores go (default: a temporary directory, removed at the end)")
	python := fl.String("python", "/usr/bin/python3", "Python with zarr 2.13 and numcodecs 0.11")
	parts := countFlag(4)
	fl.Var(&parts, "parts", "the processes of the split runs (--part K/N)")
	gwBin := fl.String("versitygw", "", "the versitygw binary for the S3 rows (default: $ZFUSE_VERSITYGW, $GOPATH/bin or $HOME/go/bin, then PATH); none found: no S3 rows")
	if err := parseFlags(fl, args, 0, stdout); err != nil { // usage.go: help to stdout, bad usage exits 2
		return bench.CompressConfig{}, err
	}
	return bench.CompressConfig{Size: int64(size), Rounds: int(rounds), Workers: int(workers), Parts: int(parts),
		Dir: *dir, Python: *python, Versitygw: *gwBin, Stderr: stderr}, nil
}

// benchFloor is zfuse bench floor [--kernel-readahead N] [--transport T]
// STORE MOUNTPOINT: it serves the files of the array at STORE (an
// uncompressed store) at MOUNTPOINT until SIGINT/SIGTERM (floor.Serve),
// logging to stderr.
func benchFloor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse bench floor", flag.ContinueOnError)
	fl.SetOutput(stderr)
	ra := Size(16 << 20)
	var transport fusemount.Transport
	fl.Var(&transport, "transport", "how FUSE requests reach the floor, `auto|uring|dev`, as for zfuse mount")
	fl.Var(&ra, "kernel-readahead", "the kernel's readahead for the mount, set when running as root, as zfuse mount does; 0 leaves the kernel default")
	if err := parseFlags(fl, args, 2, stdout); err != nil { // usage.go
		return err
	}
	return floor.Serve(ctx, fl.Arg(0), fl.Arg(1), floor.Config{Transport: transport, KernelReadahead: int64(ra),
		Log: slog.New(slog.NewTextHandler(stderr, nil))})
}
