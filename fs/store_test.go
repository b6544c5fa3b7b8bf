package fs

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
)

// testArray describes one array of the test store: its metadata and the
// value of every element, from which chunks are built.
type testArray struct {
	path      string
	shape     []int
	chunks    []int
	dtype     string // "<i4", "<f8", "<i2", "|u1", "<i8"
	order     string
	sep       string // "" leaves dimension_separator out (legacy)
	missing   []string
	value     func(idx []int) float64
	layoutSep string // how chunk keys are stored; defaults to sep or "."
}

// testStore is a store written at test time, with what each path must serve.
type testStore struct {
	root   string
	stored map[string][]byte     // every file as written
	raw    map[string][]byte     // chunk key -> decoded chunk bytes (raw arrays)
	arrays map[string]*testArray // the arrays add wrote, by path
}

func (s *testStore) write(t testing.TB, key string, b []byte) {
	t.Helper()
	testutil.WriteFile(t, s.root, key, b)
	s.stored[key] = b
}

func zlibBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := zlib.NewWriterLevel(&buf, 1)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func itemSize(dtype string) int {
	switch dtype[1:] {
	case "u1":
		return 1
	case "i2":
		return 2
	case "i4":
		return 4
	}
	return 8
}

// encode writes v as one element of dtype, little-endian.
func encode(dst []byte, dtype string, v float64) {
	switch dtype[1:] {
	case "u1":
		dst[0] = uint8(v)
	case "i2":
		binary.LittleEndian.PutUint16(dst, uint16(int16(v)))
	case "i4":
		binary.LittleEndian.PutUint32(dst, uint32(int32(v)))
	case "i8":
		binary.LittleEndian.PutUint64(dst, uint64(int64(v)))
	case "f8":
		binary.LittleEndian.PutUint64(dst, math.Float64bits(v))
	}
}

// chunk returns the decoded bytes of the chunk at coords: the full chunk
// shape in the array's order, edge padding filled with 0 (the fill value).
func (a *testArray) chunk(coords []int) []byte {
	n, is := 1, itemSize(a.dtype)
	for _, c := range a.chunks {
		n *= c
	}
	out := make([]byte, n*is)
	local := make([]int, len(a.chunks))
	idx := make([]int, len(a.chunks))
	for lin := range n {
		// local index of element lin in the chunk's memory order
		r := lin
		if a.order == "F" {
			for d := range a.chunks {
				local[d] = r % a.chunks[d]
				r /= a.chunks[d]
			}
		} else {
			for d := len(a.chunks) - 1; d >= 0; d-- {
				local[d] = r % a.chunks[d]
				r /= a.chunks[d]
			}
		}
		inside := true
		for d := range local {
			idx[d] = coords[d]*a.chunks[d] + local[d]
			inside = inside && idx[d] < a.shape[d]
		}
		if inside {
			encode(out[lin*is:], a.dtype, a.value(idx))
		}
	}
	return out
}

func (a *testArray) zarray(compressor string) []byte {
	m := map[string]any{
		"zarr_format": 2, "shape": a.shape, "chunks": a.chunks, "dtype": a.dtype,
		"compressor": json.RawMessage(compressor), "fill_value": 0, "order": a.order, "filters": nil,
	}
	if a.sep != "" {
		m["dimension_separator"] = a.sep
	}
	b, _ := json.MarshalIndent(m, "", "    ")
	return b
}

// add writes a zlib-compressed array with all its chunks but the missing
// (at the store root for path "").
func (s *testStore) add(t testing.TB, a testArray) {
	if s.arrays == nil {
		s.arrays = map[string]*testArray{}
	}
	s.arrays[a.path] = &a
	s.write(t, join(a.path, ".zarray"), a.zarray(`{"id": "zlib", "level": 1}`))
	grid := make([]int, len(a.shape))
	total := 1
	for d := range grid {
		grid[d] = (a.shape[d] + a.chunks[d] - 1) / a.chunks[d]
		total *= grid[d]
	}
	sep := a.layoutSep
	if sep == "" {
		sep = a.sep
	}
	if sep == "" {
		sep = "."
	}
	coords := make([]int, len(grid))
	for lin := range total {
		r := lin
		parts := make([]string, len(grid))
		for d := len(grid) - 1; d >= 0; d-- {
			coords[d] = r % grid[d]
			r /= grid[d]
			parts[d] = strconv.Itoa(coords[d])
		}
		key := strings.Join(parts, sep)
		if len(grid) == 0 {
			key = "0"
		}
		if slices.Contains(a.missing, key) {
			continue
		}
		raw := a.chunk(coords)
		s.write(t, join(a.path, key), zlibBytes(t, raw))
		s.raw[join(a.path, key)] = raw
	}
}

// newTestStore writes the store most tests use:
//
//	.zgroup .zattrs .zmetadata README.txt
//	temp/       5×7 <i4 C, chunks 2×3, "." keys, chunk 1.1 missing
//	group/nested/ 4×4 <f8 F, chunks 2×2, "/" keys
//	legacy/     4×4 <i2, chunks 2×2, "0/0" keys and no dimension_separator
//	scalar/     0-d <i8
//	corrupt/    4 |u1, chunks 2: chunk 1 is garbage
//	odd/        unknown codec: passed through
//	bad/        negative shape: passed through
func newTestStore(t testing.TB) *testStore {
	s := &testStore{root: t.TempDir(), stored: map[string][]byte{}, raw: map[string][]byte{}}
	s.write(t, ".zgroup", []byte(`{"zarr_format": 2}`))
	s.write(t, ".zattrs", []byte(`{"answer": 42}`))
	s.write(t, "README.txt", []byte("not zarr\n"))
	s.write(t, "group/.zgroup", []byte(`{"zarr_format": 2}`))
	s.add(t, testArray{path: "temp", shape: []int{5, 7}, chunks: []int{2, 3}, dtype: "<i4", order: "C", sep: ".",
		missing: []string{"1.1"}, value: func(i []int) float64 { return float64(i[0]*100 + i[1] + 1) }})
	s.write(t, "temp/.zattrs", []byte(`{"units": "K"}`))
	s.add(t, testArray{path: "group/nested", shape: []int{4, 4}, chunks: []int{2, 2}, dtype: "<f8", order: "F", sep: "/",
		value: func(i []int) float64 { return float64(i[0]*4+i[1]) + 0.5 }})
	s.add(t, testArray{path: "legacy", shape: []int{4, 4}, chunks: []int{2, 2}, dtype: "<i2", order: "C", layoutSep: "/",
		value: func(i []int) float64 { return float64(-i[0]*10 - i[1]) }})
	s.add(t, testArray{path: "scalar", shape: []int{}, chunks: []int{}, dtype: "<i8", order: "C", sep: ".",
		value: func([]int) float64 { return 1 << 40 }})
	s.add(t, testArray{path: "corrupt", shape: []int{4}, chunks: []int{2}, dtype: "|u1", order: "C", sep: ".",
		value: func(i []int) float64 { return float64(i[0] + 7) }})
	s.write(t, "corrupt/1", []byte("this is not zlib"))
	delete(s.raw, "corrupt/1")
	s.write(t, "odd/.zarray", []byte(`{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4",
		"compressor": {"id": "nosuch"}, "fill_value": 0, "order": "C", "filters": null}`))
	s.write(t, "odd/0", []byte("opaque bytes"))
	s.write(t, "bad/.zarray", []byte(`{"zarr_format": 2, "shape": [-1], "chunks": [4], "dtype": "<i4",
		"compressor": null, "fill_value": 0, "order": "C", "filters": null}`))
	s.write(t, "bad/0", []byte("more opaque bytes"))
	// Consolidated metadata, as zarr.consolidate_metadata writes it.
	meta := map[string]json.RawMessage{}
	for k, v := range s.stored {
		if b := filepath.Base(k); b == ".zarray" || b == ".zgroup" || b == ".zattrs" {
			meta[k] = v
		}
	}
	zm, _ := json.MarshalIndent(map[string]any{"zarr_consolidated_format": 1, "metadata": meta}, "", "    ")
	s.write(t, ".zmetadata", zm)
	return s
}

// logBuffer collects log output; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newTestTree opens s as a Tree whose log goes to the returned buffer;
// each of set may change its Config first.
func newTestTree(t testing.TB, s *testStore, set ...func(*Config)) (*Tree, *logBuffer) {
	ds, err := store.Dir(s.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return treeOver(t, ds, set...)
}

// treeOver returns a Tree over ds whose log goes to the returned buffer,
// with the changes set makes to its Config.
func treeOver(t testing.TB, ds store.Store, set ...func(*Config)) (*Tree, *logBuffer) {
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{Store: ds, Log: log, Chunks: testLoader(t, ds, log)}
	for _, f := range set {
		f(&cfg)
	}
	return New(cfg), logs
}

// testLoader returns the chunk loader the tests' trees use: the real one,
// with small budgets, closed when the test ends.
func testLoader(t testing.TB, s store.Store, log *slog.Logger) *readahead.Loader {
	l := readahead.New(readahead.Config{Store: s, Log: log, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
	t.Cleanup(func() { l.Close() })
	return l
}

// mountTree mounts tr for real on the serving path $ZFUSE_SERVING (Auto
// if unset) and unmounts it when the test ends.
func mountTree(t *testing.T, tr *Tree, writable bool) string {
	t.Helper()
	serving, _ := ParseServing(os.Getenv("ZFUSE_SERVING"))
	dir, _ := mountServing(t, tr, writable, serving, false)
	return dir
}

// servings are the serving paths a test runs on: each one this process
// can use (Passthrough needs root, and is skipped locally without it).
func servings(t *testing.T, f func(t *testing.T, s Serving)) {
	for _, s := range []Serving{Passthrough, NoOpen, Open} {
		t.Run(s.String(), func(t *testing.T) {
			if s == Passthrough {
				testutil.Need(t, "root, for FUSE passthrough", os.Geteuid() == 0)
			}
			f(t, s)
		})
	}
}

// mountServing mounts tr on the serving path s, checks that the mount uses
// it, and unmounts it when the test ends.
// With debug, every FUSE request is logged to tr's log.
func mountServing(t *testing.T, tr *Tree, writable bool, s Serving, debug bool) (string, *Server) {
	t.Helper()
	return mountWith(t, tr, MountConfig{Serving: s, Debug: debug, writable: writable})
}

// mountWith mounts tr with cfg (its serving path checked, its panics
// failing the test) and unmounts it when the test ends.
func mountWith(t *testing.T, tr *Tree, cfg MountConfig) (string, *Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	dir := t.TempDir()
	cfg.FsName = "zfuse-test"
	cfg.OnPanic = func(v any) { t.Errorf("FUSE request panicked: %v", v) }
	s := cfg.Serving
	srv, err := Mount(context.Background(), dir, tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	if s != Auto && srv.Serving() != s {
		t.Fatalf("mounted on %v, asked for %v: %s", srv.Serving(), s, srv.Stats().PassthroughRefused)
	}
	return dir, srv
}
