package fs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
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
	// KernelReadahead, when positive and running as root, is the kernel's
	// readahead for the mount in bytes, set through sysfs after mounting.
	// FUSE caps it at the 1 MiB negotiated at mount time; raising it lets
	// the kernel ask for more of a large chunk file at once (gcsfuse does
	// the same). Failure is logged at Debug and otherwise ignored.
	KernelReadahead int64
	// writable leaves out the "ro" mount option, so tests can check that
	// the nodes themselves refuse writes.
	writable bool
}

// Attribute and entry timeouts: the tree never changes while mounted.
const (
	attrTimeout     = time.Hour
	negativeTimeout = time.Minute
	requestSize     = 1 << 20 // largest FUSE read; also the kernel's readahead window, unless KernelReadahead raises it
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
			// Replies carry bytes from memory, never a file descriptor:
			// go-fuse's splice path would only fail (a 1 MiB reply and its
			// header do not fit the largest pipe) before writing anyway.
			DisableSplice: true,
			Debug:         cfg.Debug,
			Logger:        goFuseLog,
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
	if cfg.KernelReadahead > 0 {
		bdi, from, err := setKernelReadahead(dir, cfg.KernelReadahead)
		if err != nil {
			t.log.Debug("kernel readahead left as it was", "mountpoint", dir, "err", err)
		} else {
			t.log.Info("kernel readahead raised", "mountpoint", dir, "bdi", bdi, "from_kb", from, "to_kb", cfg.KernelReadahead>>10)
		}
	}
	return srv, nil
}

// setKernelReadahead sets the readahead of the file system mounted at dir to
// n bytes, in /sys/class/bdi/MAJOR:MINOR/read_ahead_kb, where MAJOR:MINOR is
// the mount's device number (st_dev of its root). It needs root. It returns
// the bdi name and the previous value in KiB.
func setKernelReadahead(dir string, n int64) (bdi string, fromKB int64, err error) {
	if os.Geteuid() != 0 {
		return "", 0, fmt.Errorf("not root")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", 0, fmt.Errorf("stat %s: %w", dir, err)
	}
	dev := uint64(st.Dev)
	// Linux's dev_t: 12 bits of major and 20 of minor, split over 64 bits.
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	bdi = fmt.Sprintf("%d:%d", major, minor)
	p := "/sys/class/bdi/" + bdi + "/read_ahead_kb"
	old, err := os.ReadFile(p)
	if err != nil {
		return bdi, 0, err
	}
	fromKB, _ = strconv.ParseInt(strings.TrimSpace(string(old)), 10, 64)
	if err := os.WriteFile(p, []byte(strconv.FormatInt(n>>10, 10)), 0); err != nil {
		return bdi, fromKB, err
	}
	return bdi, fromKB, nil
}
