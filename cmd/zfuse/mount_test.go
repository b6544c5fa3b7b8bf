package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
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
	s := testutil.EmptyV2Store(t)
	s.Add(t, testutil.V2Array{Path: "a", Shape: []int{64}, Chunks: []int{16}, DType: "<f4", Order: "C", Sep: ".",
		Value: func(i []int) float64 { return float64(i[0]) }})
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	loader := readahead.New(readahead.Config{Store: ds, DecodedBudget: 1 << 20, ReadaheadBudget: 1 << 20})
	defer loader.Close()
	tr := tree.New(tree.Config{Store: ds, Chunks: loader})
	statsFile := filepath.Join(t.TempDir(), "stats.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- mount(ctx, slog.New(slog.DiscardHandler), tr, s.Root, t.TempDir(), mountOpts{
			statsFile: statsFile, stats: loader.Stats,
			mounted: func(*fusemount.Server) { syscall.Kill(os.Getpid(), syscall.SIGUSR1) },
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(statsFile)
		var doc statsDoc
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

// TestMain lets the test binary be statWithin's child, as zfuse is:
// checkMountpoint runs this executable to stat a mountpoint.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == statProbe {
		os.Exit(probeStat(os.Args[2]))
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
