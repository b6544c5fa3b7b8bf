package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// GBps is a rate in GB/s (1e9 bytes per second): n bytes in sec seconds.
func GBps(n int64, sec float64) float64 { return float64(n) / sec / 1e9 }

// ReadFile opens, reads whole (len(buf) bytes at a time, into buf) and
// closes the file at path, and returns the bytes read.
func ReadFile(path string, buf []byte) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for {
		m, err := f.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ReadFiles is the file tool: it reads the files names under root whole
// (ReadFile, 1 MiB at a time), in that order, and returns the bytes read
// and the time taken.
func ReadFiles(ctx context.Context, root string, names []string) (int64, time.Duration, error) {
	buf := make([]byte, 1<<20)
	var n int64
	start := time.Now()
	for _, k := range names {
		if err := ctx.Err(); err != nil {
			return n, 0, err
		}
		m, err := ReadFile(filepath.Join(root, k), buf)
		n += m
		if err != nil {
			return n, 0, err
		}
	}
	return n, time.Since(start), nil
}

// ReadEpochs reads the files names under root (ReadFiles) epochs times,
// and returns each epoch's rate in GB/s. after, if not nil, is called
// after each epoch (1, 2, ...), outside its time: a bench counts the
// requests an epoch made there.
func ReadEpochs(ctx context.Context, root string, names []string, epochs int, after func(epoch int) error) ([]float64, error) {
	return epochRates(epochs, after, func() (int64, time.Duration, error) { return ReadFiles(ctx, root, names) })
}

// epochRates runs one epoch, which returns the bytes it read and the time
// it took, epochs times, and returns each epoch's rate in GB/s; after, if
// not nil, is called after each epoch (1, 2, ...), outside its time.
func epochRates(epochs int, after func(epoch int) error, epoch func() (int64, time.Duration, error)) ([]float64, error) {
	out := make([]float64, epochs)
	for e := range out {
		n, d, err := epoch()
		if err != nil {
			return nil, err
		}
		out[e] = GBps(n, d.Seconds())
		if after != nil {
			if err := after(e + 1); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// WarmDir reads every file of dir, so that its bytes are in the page
// cache: measurements then read from memory, where the disk does not set
// the pace.
func WarmDir(dir string) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for _, e := range es {
		if _, err := ReadFile(filepath.Join(dir, e.Name()), buf); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}
