package mountlib

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
)

// TestStatsSignalAtMount: a SIGUSR1 sent the moment the mount is up (here:
// from the hook that runs before "mounted" is logged) writes the stats
// file. Caught only once serving began, it was lost, or, arriving before
// any handler, was dropped (the Go runtime ignores a signal nobody asked
// for). Five mounts, each signalled at once.
func TestStatsSignalAtMount(t *testing.T) {
	for range 5 {
		statsSignalAtMount(t)
	}
}

func statsSignalAtMount(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	c := smallMount(t, t.TempDir())
	c.StatsFile = filepath.Join(t.TempDir(), "stats.json")
	c.Mounted = func(*fusemount.Server) { syscall.Kill(os.Getpid(), syscall.SIGUSR1) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Mount(ctx, c) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(c.StatsFile)
		var doc StatsDoc
		if err == nil && json.Unmarshal(b, &doc) == nil && doc.Pid == os.Getpid() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("mount returned before writing the stats file: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no stats file 10 s after a SIGUSR1 sent as the mount came up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// smallMount returns the Config of a mount of a small store at dir; the
// store and its loader are closed when the test ends.
func smallMount(t *testing.T, dir string) Config {
	s := testutil.EmptyV2Store(t)
	s.Add(t, testutil.V2Array{Path: "a", Shape: []int{64}, Chunks: []int{16}, DType: "<f4", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]) }})
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	loader := readahead.New(readahead.Config{Store: ds, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
	t.Cleanup(func() { loader.Close() })
	return Config{Source: s.Root, Dir: dir, Tree: tree.New(tree.Config{Store: ds, Chunks: loader}), Stats: loader.Stats}
}

// TestNonEmptyMountpoint: a mountpoint that holds files is refused (the
// mount would hide them), unless allowNonEmpty; the mount over it then
// serves, and its unmount line at Info is a short summary, the counters
// following at Debug.
func TestNonEmptyMountpoint(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Mount(context.Background(), smallMount(t, dir))
	if err == nil || !strings.Contains(err.Error(), "is not empty (it holds notes.txt)") || !strings.Contains(err.Error(), "allow_non_empty") {
		t.Fatalf("mount over a directory holding a file: %v, want refused", err)
	}
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := smallMount(t, dir)
	c.AllowNonEmpty, c.Log = true, log
	c.Ready = func() {
		if _, err := os.Stat(filepath.Join(dir, "a", ".zarray")); err != nil {
			t.Errorf("through the mount over a non-empty directory: %v", err)
		}
		cancel()
	}
	go func() { done <- Mount(ctx, c) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var info, debug string
	for line := range strings.Lines(logs.String()) {
		switch {
		case strings.Contains(line, "level=INFO msg=unmounted"):
			info = line
		case strings.Contains(line, "level=DEBUG") && strings.Contains(line, "msg=\"unmounted: the counters\""):
			debug = line
		}
	}
	if info == "" || len(info) > 300 || strings.Contains(info, "stats.") {
		t.Errorf("the unmount line at Info (%d bytes): %q, want a short summary", len(info), info)
	}
	if !strings.Contains(debug, "stats.reads=") || !strings.Contains(debug, "serve=") {
		t.Errorf("the counters at Debug: %q", debug)
	}
}

// TestMain lets the test binary be statWithin's child, as zfuse is:
// checkMountpoint runs this executable to stat a mountpoint.
func TestMain(m *testing.M) {
	if code, ok := StatProbe(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestStatWithin: a directory answers, a missing path is ENOENT, from the
// child that stats for statWithin.
func TestStatWithin(t *testing.T) {
	dir := t.TempDir()
	if fi, err := statWithin(dir, 10*time.Second); err != nil || !fi.IsDir() {
		t.Errorf("statWithin(%s) = %v, %v; want a directory", dir, fi, err)
	}
	if _, err := statWithin(filepath.Join(dir, "nosuch"), 10*time.Second); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("statWithin of a missing path: %v, want ENOENT", err)
	}
}

func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@example.org/data/x.zarr?token=abc": "https://REDACTED@example.org/data/x.zarr",
		"s3://bucket/prefix": "s3://bucket/prefix",
		"/data/x.zarr":       "/data/x.zarr",
	} {
		if got := Display(in); got != want {
			t.Errorf("Display(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatsFile: the stats file holds the counters and the process, and
// is written whole (no .tmp left).
func TestStatsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stats.json")
	s := readahead.Stats{Reads: 7, PrefetchUsed: 5, Decode: map[string]readahead.DecodeStats{"zstd": {Chunks: 3, Time: time.Second}}}
	if err := writeStats(p, s, fusemount.ServeStats{Serving: "no-open", Reads: 3}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc StatsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Pid != os.Getpid() || doc.Stats.Reads != 7 || doc.Stats.Decode["zstd"].Time != time.Second || doc.Serve.Serving != "no-open" || doc.Serve.Reads != 3 {
		t.Errorf("stats file %s", b)
	}
	if _, err := os.Stat(p + ".tmp"); err == nil {
		t.Errorf("temporary file left behind")
	}
}
