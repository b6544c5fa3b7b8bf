package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/internal/testutil"
)

// noGPU returns nil where this machine has a usable GPU, else the error
// gpu.Open gives (no libcuda.so.1, no device, ...). The tests expect what
// each case should do, so they pass with and without a GPU.
func noGPU(t testing.TB) error {
	t.Helper()
	g, err := gpu.Open(gpu.Config{})
	if err == nil {
		g.Close()
		return nil
	}
	if !errors.Is(err, gpu.ErrUnavailable) && gpu.Reason(err) == "" {
		t.Fatalf("gpu.Open: %v: no reason", err)
	}
	return err
}

// decoderColumns runs zfuse info with args and returns the DECODER column
// by array path, and the stderr.
func decoderColumns(t *testing.T, args ...string) (map[string]string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"info"}, args...), &stdout, &stderr); err != nil {
		t.Fatalf("zfuse info %q: %v\n%s", args, err, stderr.String())
	}
	cols := regexp.MustCompile(` {2,}`) // tabwriter pads columns with 2 or more spaces
	// The table, then a blank line and the serving path.
	table, serving, _ := strings.Cut(stdout.String(), "\n\n")
	if !strings.HasPrefix(serving, "serving path (zfuse mount --serving ") {
		t.Errorf("zfuse info %q ends %q, not with the serving path", args, serving)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	head := cols.Split(lines[0], -1)
	at := -1
	for i, h := range head {
		if h == "DECODER" {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no DECODER column:\n%s", stdout.String())
	}
	out := map[string]string{}
	for _, l := range lines[1:] {
		f := cols.Split(l, -1)
		if len(f) != len(head) {
			t.Fatalf("line %q has %d columns, the header %d", l, len(f), len(head))
		}
		out[f[0]] = f[at]
	}
	return out, stderr.String()
}

// TestDecoderInfo: zfuse info's DECODER column says, for --decoder auto,
// cpu and gpu, which decoder each array's chunks get and why, and --decoder
// gpu refuses to start without a GPU. The store is metadata only: info
// decides from metadata.
func TestDecoderInfo(t *testing.T) {
	src := t.TempDir()
	write := storeWriter(t, src)
	v2 := func(compressor string) string {
		return `{"zarr_format": 2, "shape": [100], "chunks": [10], "dtype": "<f4", "fill_value": 0, "order": "C",
			"filters": null, "compressor": ` + compressor + `}`
	}
	write(".zgroup", `{"zarr_format": 2}`)
	write("bloscl/.zarray", v2(`{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}`))
	write("bloscz/.zarray", v2(`{"id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 2, "blocksize": 0}`))
	write("lz4/.zarray", v2(`{"id": "lz4", "acceleration": 1}`))
	write("zstd/.zarray", v2(`{"id": "zstd", "level": 3}`))
	write("raw/.zarray", v2(`null`))
	write("v3/zarr.json", `{"zarr_format": 3, "node_type": "group"}`)
	write("v3/sharded/zarr.json", `{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "float32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
		"chunk_key_encoding": {"name": "default"}, "fill_value": 0,
		"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
			"codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
				{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle", "typesize": 4, "blocksize": 0}}],
			"index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}`)

	gpuErr := noGPU(t)
	reason := gpu.Reason(gpuErr)
	t.Logf("GPU: %v", gpuErr)
	auto := map[string]string{ // with a GPU
		"bloscl":     fmt.Sprintf("gpu: blosc lz4 shuffle (batches under %d MiB on the CPU)", gpu.DefaultMinBatchBytes>>20),
		"bloscz":     "cpu: blosc zstd has no GPU kernel",
		"lz4":        fmt.Sprintf("gpu: lz4 (batches under %d MiB on the CPU)", gpu.DefaultMinBatchBytes>>20),
		"zstd":       "cpu: zstd has no GPU kernel",
		"raw":        "none: stored uncompressed",
		"v3/sharded": fmt.Sprintf("gpu,inner-by-range: blosc lz4 bitshuffle (batches under %d MiB on the CPU)", gpu.DefaultMinBatchBytes>>20),
	}
	if gpuErr != nil { // short: the reason is for the log (--log-level debug)
		auto["bloscl"] = "cpu: no GPU"
		auto["lz4"] = "cpu: no GPU"
		auto["v3/sharded"] = "cpu,inner-by-range: no GPU"
	}
	want := map[string]map[string]string{
		"auto": auto,
		"cpu": {
			"bloscl": "cpu: --decoder cpu", "bloscz": "cpu: --decoder cpu", "lz4": "cpu: --decoder cpu",
			"zstd": "cpu: --decoder cpu", "raw": "none: stored uncompressed", "v3/sharded": "cpu,inner-by-range: --decoder cpu",
		},
		"gpu": {
			"bloscl": "gpu: blosc lz4 shuffle", "bloscz": "cpu: blosc zstd has no GPU kernel", "lz4": "gpu: lz4",
			"zstd": "cpu: zstd has no GPU kernel", "raw": "none: stored uncompressed", "v3/sharded": "gpu,inner-by-range: blosc lz4 bitshuffle",
		},
	}
	for _, mode := range []string{"auto", "cpu", "gpu"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "gpu" && gpuErr != nil {
				// Refused by every command, saying why.
				for _, cmd := range [][]string{{"info", src}, {"cat", src, "bloscl/.zarray"}, {"mount", src, t.TempDir()}} {
					var stdout, stderr bytes.Buffer
					args := append([]string{cmd[0], "--decoder", "gpu"}, cmd[1:]...)
					err := run(context.Background(), args, &stdout, &stderr)
					if err == nil || !errors.Is(err, gpu.ErrUnavailable) || !strings.Contains(err.Error(), "--decoder gpu") ||
						!strings.Contains(err.Error(), reason) {
						t.Errorf("zfuse %q without a GPU: %v, want an error naming --decoder gpu and %q", args, err, reason)
					}
				}
				return
			}
			args := []string{src}
			if mode != "auto" {
				args = []string{"--decoder", mode, src}
			}
			got, stderr := decoderColumns(t, args...)
			for path, w := range want[mode] {
				if got[path] != w {
					t.Errorf("--decoder %s: %s: DECODER %q, want %q", mode, path, got[path], w)
				}
			}
			if stderr != "" { // the choice is in the column; no log line
				t.Errorf("--decoder %s: stderr %q", mode, stderr)
			}
			if mode == "auto" && gpuErr != nil {
				_, stderr := decoderColumns(t, "--log-level", "debug", src)
				if !strings.Contains(stderr, "level=DEBUG msg=\"no GPU: LZ4 and Blosc-LZ4 decode on the CPU\"") || !strings.Contains(stderr, reason) {
					t.Errorf("--log-level debug: no line saying why there is no GPU:\n%s", stderr)
				}
			}
		})
	}
}

// TestDecoderFlag: --decoder takes auto, cpu or gpu and nothing else, in
// every command that has it, before anything is opened.
func TestDecoderFlag(t *testing.T) {
	src := filepath.Join(t.TempDir(), "absent")
	for _, args := range [][]string{
		{"mount", "--decoder", "tpu", src, src},
		{"cat", "--decoder", "GPU", src, "x"},
		{"info", "--decoder", "", src},
		{"bench", "--decoder", "fast"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "want auto, cpu or gpu") {
			t.Errorf("zfuse %q: %v, want the flag refused", args, err)
		}
	}
}

// TestDecoderMount: a store written by zarr-python (Blosc-LZ4, LZ4 and
// Zstd arrays) mounted with --decoder cpu and auto (and gpu where there is
// a GPU) serves every chunk as the values written, and zfuse cat agrees;
// auto without a GPU says so once, at Info (no GPU is no fault), with the
// reason.
func TestDecoderMount(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	testutil.NeedPython(t, "zarr", "numcodecs")
	src := filepath.Join(t.TempDir(), "store.zarr")
	script := `
import sys, numpy as np, numcodecs, zarr
x = (np.arange(96 * 64, dtype="<f4") * 0.25).reshape(96, 64)
g = zarr.open_group(sys.argv[1], mode="w")
for name, c in [("blosc", numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)), ("lz4", numcodecs.LZ4(1)), ("zstd", numcodecs.Zstd(3))]:
    g.create_dataset(name, data=x, chunks=(32, 32), compressor=c)
`
	out, err := exec.Command(testutil.Python, "-c", script, src).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Chunk (i, j) holds x[32i:32i+32, 32j:32j+32] in C order.
	chunk := func(i, j int) []byte {
		b := make([]byte, 0, 32*32*4)
		for r := range 32 {
			for c := range 32 {
				v := float32((i*32+r)*64+j*32+c) * 0.25
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
		}
		return b
	}
	// mount's process-wide settings stay as they are in the test binary.
	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "off")
	gpuErr := noGPU(t)
	modes := []string{"cpu", "auto"}
	if gpuErr == nil {
		modes = append(modes, "gpu")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logs := newLogWatch("msg=mounted")
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"mount", "--decoder", mode, src, dir}, new(bytes.Buffer), logs) }()
			select {
			case <-logs.seen:
			case err := <-done:
				t.Fatalf("zfuse mount --decoder %s: %v\n%s", mode, err, logs)
			case <-time.After(time.Minute):
				t.Fatalf("not mounted within a minute\n%s", logs)
			}
			for _, array := range []string{"blosc", "lz4", "zstd"} {
				for i := range 3 {
					for j := range 2 {
						key := fmt.Sprintf("%s/%d.%d", array, i, j)
						want := chunk(i, j)
						got, err := os.ReadFile(filepath.Join(dir, key))
						if err != nil || !bytes.Equal(got, want) {
							t.Errorf("--decoder %s: %s through the mount: %v (%d bytes, equal %v)", mode, key, err, len(got), bytes.Equal(got, want))
						}
						var stdout, stderr bytes.Buffer
						err = run(context.Background(), []string{"cat", "--decoder", mode, src, key}, &stdout, &stderr)
						if err != nil || !bytes.Equal(stdout.Bytes(), want) {
							t.Errorf("zfuse cat --decoder %s %s: %v %s (%d bytes)", mode, key, err, stderr.String(), stdout.Len())
						}
					}
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("zfuse mount --decoder %s: %v", mode, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("mount did not stop within a minute of cancel")
			}
			log := logs.String()
			said := strings.Count(log, "no GPU: LZ4 and Blosc-LZ4 decode on the CPU")
			switch {
			case mode == "auto" && gpuErr != nil:
				if said != 1 || strings.Contains(log, "level=WARN") || !strings.Contains(log, "level=INFO msg=\"no GPU") || !strings.Contains(log, gpu.Reason(gpuErr)) {
					t.Errorf("auto without a GPU: want one Info line naming %q and no Warn, got\n%s", gpu.Reason(gpuErr), log)
				}
			case said != 0:
				t.Errorf("--decoder %s: %d no-GPU lines\n%s", mode, said, log)
			}
			if gpuUsed := strings.Contains(log, "on the GPU"); gpuUsed != (mode != "cpu" && gpuErr == nil) {
				t.Errorf("--decoder %s: GPU in use %v; no GPU: %v\n%s", mode, gpuUsed, gpuErr, log)
			}
			// --decoder gpu sends every Blosc-LZ4 and LZ4 batch to the GPU,
			// however small: its counters, logged at unmount, show them.
			if m := regexp.MustCompile(`GPUJobs:(\d+)`).FindStringSubmatch(log); mode == "gpu" && (m == nil || m[1] == "0") {
				t.Errorf("--decoder gpu: no chunks decoded on the GPU\n%s", log)
			}
		})
	}
}

// A logWatch is a mount's stderr: it keeps what is written and closes
// seen once it has held the string it waits for.
type logWatch struct {
	want string
	seen chan struct{}

	mu  sync.Mutex // guards the fields below
	buf bytes.Buffer
	hit bool
}

func newLogWatch(want string) *logWatch { return &logWatch{want: want, seen: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.hit && strings.Contains(w.buf.String(), w.want) {
		w.hit = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
