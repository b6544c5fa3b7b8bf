package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// This file holds zfuse bench's readers: the file tool in Go, and the
// Python ones through bench.py.

// scanEpochs reads the files names under root, in that order, epochs
// times, and returns each epoch's rate in GB/s (1e9 bytes per second).
func scanEpochs(ctx context.Context, root string, names []string, epochs int) ([]float64, error) {
	out := make([]float64, epochs)
	for e := range out {
		n, d, err := scan(ctx, root, names)
		if err != nil {
			return nil, err
		}
		out[e] = float64(n) / d.Seconds() / 1e9
	}
	return out, nil
}

// scan is the file tool: it opens, reads whole (1 MiB at a time) and closes
// the files names under root in order, and returns the bytes read and the
// time taken.
func scan(ctx context.Context, root string, names []string) (int64, time.Duration, error) {
	buf := make([]byte, 1<<20)
	var n int64
	start := time.Now()
	for _, k := range names {
		if err := ctx.Err(); err != nil {
			return n, 0, err
		}
		m, err := readFile(filepath.Join(root, k), buf) // warmup.go
		n += m
		if err != nil {
			return n, 0, err
		}
	}
	return n, time.Since(start), nil
}

// listChunks returns the chunk files of the array at root in listing
// order: as os.ReadDir lists them, sorted by name ("0.0.0", "0.0.1",
// "0.0.10", ...), leaving out the metadata.
func listChunks(root string) ([]string, error) {
	es, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// warmStore reads every file of a store, so that its values are in the
// page cache: every measurement reads stores from memory, where FUSE and
// the decoders, not the disk, set the pace.
func warmStore(dir string) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range es {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// python3 runs bench.py with args and returns the rates of the epochs it
// prints (for the readers), or nothing (for write).
func (b *bencher) python3(ctx context.Context, args ...string) ([]float64, error) {
	cmd := exec.CommandContext(ctx, b.python, append([]string{filepath.Join(b.work, "bench.py")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("bench: bench.py %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	if args[0] == "write" {
		return nil, nil
	}
	var epochs []struct {
		Seconds float64 `json:"seconds"`
		Bytes   int64   `json:"bytes"`
	}
	if err := json.Unmarshal(out, &epochs); err != nil {
		return nil, fmt.Errorf("bench: bench.py %s printed %q: %w", args[0], out, err)
	}
	rates := make([]float64, len(epochs))
	for i, e := range epochs {
		rates[i] = float64(e.Bytes) / e.Seconds / 1e9
	}
	return rates, nil
}

// verify checks that every chunk file of the mount equals the
// uncompressed store's.
func (b *bencher) verify(set *storeSet, mnt string) error {
	for _, k := range set.keys {
		got, err := os.ReadFile(filepath.Join(mnt, k))
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(set.dir, storeRaw, k))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("bench: %s read through the mount differs from the uncompressed store", k)
		}
	}
	return nil
}
