package fs

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
)

// newTestTree opens s as a Tree whose log goes to the returned buffer;
// each of set may change its Config first.
func newTestTree(t testing.TB, s *testutil.V2Store, set ...func(*Config)) (*Tree, *testutil.LogBuffer) {
	ds, err := store.Dir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return treeOver(t, ds, set...)
}

// treeOver returns a Tree over ds whose log goes to the returned buffer,
// with the changes set makes to its Config.
func treeOver(t testing.TB, ds store.Store, set ...func(*Config)) (*Tree, *testutil.LogBuffer) {
	logs := &testutil.LogBuffer{}
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
