package integration

// This file checks that a mount with --refresh keeps its per-array state
// bounded while an array's metadata is rewritten over and over: every
// metadata read is a new array to the daemon.

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestRefreshBounded rewrites an array's .zarray every 100 ms for a
// minute, alternating its first shape and a few grown ones, and its first
// chunks with it (the same bytes, new files), through a mount with
// --refresh 50ms, while a reader reads those chunks out of grid order (so
// that readahead computes name orders). Every read returns the chunk's
// bytes; the loader's per-array tables stay within their bounds, name
// orders one per grid; and the daemon's RSS in the last quarter of the run
// stays near the first quarter's.
func TestRefreshBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of metadata rewrites")
	}
	needMount(t)
	const (
		chunk    = 64 << 10 // bytes (|u1)
		base     = 16       // chunks of the first shape
		grown    = 4        // grown shapes: base+1 .. base+grown chunks
		read     = 8        // chunks the reader reads, rewritten each cycle
		run      = 60 * time.Second
		interval = 100 * time.Millisecond
	)
	src := t.TempDir()
	chunks := make([][]byte, base+grown)
	stored := make([][]byte, len(chunks))
	for i := range chunks {
		chunks[i] = bytes.Repeat([]byte{byte(i), byte(i * 7), byte(i * 13), 0}, chunk/4)
		var b bytes.Buffer
		w, _ := zlib.NewWriterLevel(&b, 1)
		w.Write(chunks[i])
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		stored[i] = b.Bytes()
		writeRenamed(t, filepath.Join(src, strconv.Itoa(i)), stored[i])
	}
	zarray := func(n int) []byte {
		return fmt.Appendf(nil, `{"zarr_format": 2, "shape": [%d], "chunks": [%d], "dtype": "|u1", "compressor": {"id": "zlib", "level": 1}, "filters": null, "fill_value": 0, "order": "C"}`, n*chunk, chunk)
	}
	writeRenamed(t, filepath.Join(src, ".zarray"), zarray(base))
	addr := testutil.FreeAddr(t)
	m := mount(t, src, "--refresh", "50ms", "--metrics", addr,
		"--cache-decoded", "8MiB", "--cache-compressed", "8MiB", "--readahead", "8MiB")
	pid := m.cmd.Process.Pid

	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	var reads, stale int
	go func() {
		order := []int{5, 0, 3, 1, 4, 2, 7, 6} // no pattern in grid order
		for {
			for _, i := range order {
				select {
				case <-stop:
					readerDone <- nil
					return
				default:
				}
				got, err := os.ReadFile(filepath.Join(m.Dir, strconv.Itoa(i)))
				switch {
				case errors.Is(err, syscall.ESTALE):
					stale++ // replaced between its lookup and its read
				case err != nil:
					readerDone <- err
					return
				case !bytes.Equal(got, chunks[i]):
					readerDone <- fmt.Errorf("chunk %d: %d bytes, not the chunk", i, len(got))
					return
				default:
					reads++
				}
			}
		}
	}()

	var rss []int64                // KiB, one a second
	var decoders, orders []float64 // zfuse_readahead_arrays, one a second
	start, cycles := time.Now(), 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Since(start) < run {
		<-tick.C // the rewrite schedule
		n := base
		if cycles%2 == 1 {
			n = base + 1 + cycles/2%grown
		}
		writeRenamed(t, filepath.Join(src, ".zarray"), zarray(n))
		for i := range read {
			writeRenamed(t, filepath.Join(src, strconv.Itoa(i)), stored[i])
		}
		cycles++
		if cycles%10 == 0 {
			rss = append(rss, vmRSS(t, pid))
			mm := scrape(t, addr)
			decoders = append(decoders, mm[`zfuse_readahead_arrays{table="decoders"}`])
			orders = append(orders, mm[`zfuse_readahead_arrays{table="name_orders"}`])
		}
		select {
		case err := <-readerDone:
			t.Fatalf("after %d cycles: %v", cycles, err)
		default:
		}
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	heap := scrape(t, addr)["go_memstats_heap_inuse_bytes"]
	q := len(rss) / 4
	first, last := mean(rss[:q]), mean(rss[len(rss)-q:])
	t.Logf("%d cycles, %d reads (%d ESTALE); Go heap in use %v bytes at the end; each second: decoders of %v arrays, name orders %v, VmRSS %v KiB",
		cycles, reads, stale, heap, decoders, orders, rss)
	t.Logf("VmRSS: first quarter %d KiB, last %d KiB", first, last)
	if reads < cycles {
		t.Errorf("%d reads over %d cycles: the reader hardly read", reads, cycles)
	}
	// Each cycle's chunk files are new files of a new array: far more
	// arrays than grids reach the loader.
	if d := slices.Max(decoders); d < 100 || d > 1024 {
		t.Errorf("decoders of at most %v arrays at a time: want over 100 (new arrays reached the loader) and at most 1024", d)
	}
	if o := slices.Max(orders); o < 1 || o > 1+grown {
		t.Errorf("at most %v name orders at a time: want one per grid, at most %d", o, 1+grown)
	}
	// The race detector's own memory grows by some 20 MiB a minute here,
	// with the Go heap flat: hence the margin.
	if margin := int64(32 << 10); last > first+first/4+margin {
		t.Errorf("VmRSS grew from %d KiB (first quarter) to %d KiB (last quarter): want at most a quarter and %d KiB more", first, last, margin)
	}
}

// writeRenamed writes b to p as a new file renamed into place, as
// zarr-python does: readers see the old file or the new one.
func writeRenamed(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p+".partial", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".partial", p); err != nil {
		t.Fatal(err)
	}
}

// vmRSS returns the resident set of process pid, in KiB.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status: no VmRSS line", pid)
	return 0
}

func mean(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s / int64(max(len(xs), 1))
}
