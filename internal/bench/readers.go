package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file holds zfuse bench's readers: the orders the file tool
// (ReadEpochs) reads chunk files in, and the Python readers through
// bench.py.

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

// python3 runs bench.py with args and returns the rates of the epochs it
// prints (for the readers), or nothing (for write). after, if not nil, is
// called after each epoch, while bench.py waits (the sync protocol of
// bench.py's epoch_done).
func (b *bencher) python3(ctx context.Context, after func(epoch int) error, args ...string) ([]float64, error) {
	cmd := exec.CommandContext(ctx, b.python, append([]string{filepath.Join(b.work, "bench.py")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var sync func() error
	if after != nil {
		var err error
		if sync, err = epochSync(cmd, &stderr, after); err != nil {
			return nil, err
		}
	}
	out, err := cmd.Output()
	if sync != nil {
		err = errors.Join(err, sync())
	}
	if err != nil {
		return nil, fmt.Errorf("bench: bench.py %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	if args[0] == "write" || args[0] == "writenc" {
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
		rates[i] = GBps(e.Bytes, e.Seconds)
	}
	return rates, nil
}

// epochSync makes cmd, bench.py, stop after each epoch: with
// ZFUSE_BENCH_SYNC set it writes "zfuse-bench: epoch N done" to stderr
// and waits for a line on stdin, which it gets once after(N) has
// returned. The rest of its stderr goes to log. The returned function
// waits for the stderr reader once cmd has ended, and returns what failed.
func epochSync(cmd *exec.Cmd, log *bytes.Buffer, after func(epoch int) error) (func() error, error) {
	cmd.Env = append(os.Environ(), "ZFUSE_BENCH_SYNC=1")
	cmd.Stderr = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		var failed error
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var e int
			if _, err := fmt.Sscanf(sc.Text(), "zfuse-bench: epoch %d done", &e); err != nil {
				log.WriteString(sc.Text() + "\n")
				continue
			}
			if failed == nil {
				failed = after(e)
			}
			io.WriteString(stdin, "\n")
		}
		stdin.Close()
		done <- failed
	}()
	return func() error { return <-done }, nil
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

// catEpochs reads the files names under root with cat(1), in order, epochs
// times, and returns each epoch's rate: cat's output is counted through a
// pipe, and an epoch that counts other than the files' sizes fails.
func catEpochs(ctx context.Context, root string, names []string, epochs int, after func(epoch int) error) ([]float64, error) {
	var want int64
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(root, n)
		fi, err := os.Stat(paths[i])
		if err != nil {
			return nil, err
		}
		want += fi.Size()
	}
	return epochRates(epochs, after, func() (int64, time.Duration, error) {
		start := time.Now()
		var n int64
		for batch := range slices.Chunk(paths, 1000) {
			got, err := cat(ctx, batch)
			if err != nil {
				return n, 0, err
			}
			n += got
		}
		if n != want {
			return n, 0, fmt.Errorf("bench: cat read %d bytes of %d", n, want)
		}
		return n, time.Since(start), nil
	})
}

// cat runs cat(1) on paths and returns the bytes it wrote.
func cat(ctx context.Context, paths []string) (int64, error) {
	cmd := exec.CommandContext(ctx, "cat", append([]string{"--"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("bench: cat: %w", err)
	}
	n, cerr := io.Copy(io.Discard, stdout)
	if err := errors.Join(cerr, cmd.Wait()); err != nil {
		return n, fmt.Errorf("bench: cat: %v: %s", err, &stderr)
	}
	return n, nil
}
