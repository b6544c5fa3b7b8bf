package fs

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountConfig configures Mount.
type MountConfig struct {
	FsName string // shown as the source in /proc/mounts, e.g. the store path
	Debug  bool   // log every FUSE request (at Debug level)
	// OnPanic is called when a request panics; the request fails with EIO.
	// Nil logs the panic and its stack at Error level. Tests fail the test.
	OnPanic func(v any)
	// writable leaves out the "ro" mount option, so tests can check that
	// the nodes themselves refuse writes.
	writable bool
}

// Attribute and entry timeouts: the tree never changes while mounted.
const (
	attrTimeout     = time.Hour
	negativeTimeout = time.Minute
	requestSize     = 1 << 20 // largest FUSE read; also the readahead window
)

// Mount mounts t read-only at dir and serves it until the returned server
// is unmounted (srv.Unmount, or fusermount3 -u); srv.Wait waits for that.
// ctx is for reading the root metadata only.
func Mount(ctx context.Context, dir string, t *Tree, cfg MountConfig) (*fuse.Server, error) {
	onPanic := cfg.OnPanic
	if onPanic == nil {
		onPanic = func(v any) {
			t.log.Error("request panicked", "err", v, "stack", string(debug.Stack()))
		}
	}
	timeout, negative := attrTimeout, negativeTimeout
	goFuseLog := slog.NewLogLogger(t.log.Handler(), slog.LevelDebug)
	opts := &fusefs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &negative,
		MountOptions: fuse.MountOptions{
			FsName:       cfg.FsName,
			Name:         "zfuse",
			MaxWrite:     requestSize,
			MaxReadAhead: requestSize,
			Debug:        cfg.Debug,
			Logger:       goFuseLog,
			PanicHandler: func(v any) fuse.Status {
				onPanic(v)
				return fuse.EIO
			},
		},
		Logger: goFuseLog,
	}
	if !cfg.writable {
		opts.MountOptions.Options = []string{"ro"}
	}
	m := &mount{born: time.Now()}
	root, err := t.root(ctx)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	srv, err := fusefs.Mount(dir, &dirNode{t: t, n: root, m: m}, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	return srv, nil
}
