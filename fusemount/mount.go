package fusemount

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/zfuse/zfuse/internal/mountinfo"
	"github.com/zfuse/zfuse/tree"
)

// Config configures Mount.
type Config struct {
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
	// Serving is the serving path to use (see Serving); Auto chooses.
	// Where the one asked for is refused (passthrough without
	// CAP_SYS_ADMIN, say), the mount falls back to the next that works,
	// and logs why once.
	Serving Serving
	// AllowOther lets users other than the one mounting read the mount
	// (FUSE allow_other), as a mount at boot by root needs.
	AllowOther bool
	// writable leaves out the "ro" mount option, so tests can check that
	// the nodes themselves refuse writes.
	writable bool
	// Transport is how requests reach the daemon (see Transport); Auto
	// chooses.
	Transport Transport
	// noIntroduce keeps the mount from looking chunk files up itself (as
	// for a /dev/fd/N mountpoint), so tests can see the fallback.
	noIntroduce bool
	// onLookup, if set, sees the process ID of the caller of each LOOKUP,
	// so tests can tell who looked a file up.
	onLookup func(pid uint32)
}

// Attribute and entry timeouts: the tree never changes while mounted,
// unless the Tree refreshes (tree.Config.Refresh): then no timeout is longer
// than its interval, so that the kernel comes back with LOOKUP, where each
// file's stored version is checked (mount.inode). A name that is not there
// (a chunk the store does not hold, which readers read as the fill value)
// is as sure as one that is, and kept as long: zarr-python stats every
// chunk it reads, and a missing one would otherwise cost a LOOKUP in each
// epoch that comes a minute or more after the last.
const (
	attrTimeout     = time.Hour
	negativeTimeout = time.Hour
	requestSize     = 1 << 20 // largest FUSE read; also the kernel's readahead window, unless KernelReadahead raises it
)

// A Server is a mounted Tree: the go-fuse server (Unmount, Wait), and how
// it serves.
type Server struct {
	*Conn
	m *mount
}

// Wait waits until the mount is unmounted and its helper processes (the
// placer's lookups, the guard) have ended.
func (s *Server) Wait() {
	s.Conn.Wait()
	s.m.close()
}

// close ends the mount's helper processes, once it is unmounted: the guard
// first, so that it never aborts a connection that is not this mount's.
func (m *mount) close() {
	m.closing.Do(func() {
		m.guard.stop()
		m.place.look.close()
	})
}

// Serving returns the serving path in use.
func (s *Server) Serving() Serving { return s.m.serving }

// Stats returns the counts of requests that reached the daemon.
func (s *Server) Stats() ServeStats {
	n := &s.m.n
	return ServeStats{
		Serving: s.m.serving.String(), PassthroughRefused: s.m.refused, Transport: s.Transport.String(), Requests: s.Requests(),
		Lookups: n.lookups.Load(), Opens: n.opens.Load(), PassthroughOpens: n.passthroughOpens.Load(),
		Reads: n.reads.Load(), ReadBytes: n.readBytes.Load(), ChunkReads: n.chunkReads.Load(),
		Releases: n.releases.Load(), OpenFiles: n.handles.Load() - n.releases.Load(), Interrupted: n.interrupted.Load(), DecodeErrors: n.errors.Load(),
		Replaced: n.replaced.Load(), Pushed: n.pushed.Load(), PushedBytes: n.pushedBytes.Load(), PushRefused: n.pushRefused.Load(), PushUnknown: n.pushUnknown.Load(), Introduced: n.introduced.Load(), ChunkReadTimes: n.chunkReadTimes.snapshot(),
	}
}

// FUSEOptions returns the go-fuse options of a mount with cfg: long
// attribute and entry timeouts, 1 MiB requests, readahead kept in flight
// (maxBackground), no splice, read-only, the
// kernel checking permissions itself (default_permissions: our files are
// 0444 and directories 0555, and access(2), which netCDF-C calls on every
// chunk it reads, would otherwise be a FUSE_ACCESS round trip each time),
// and go-fuse's output and panics through log. zfuse bench mounts its FUSE
// floor (a server that already holds the bytes) with them, so that the
// floor differs from a mount only in what it serves.
func FUSEOptions(cfg Config, log *slog.Logger) *fusefs.Options {
	onPanic := cfg.OnPanic
	if onPanic == nil {
		onPanic = func(v any) {
			log.Error("request panicked", "err", v, "stack", string(debug.Stack()))
		}
	}
	timeout, negative := attrTimeout, negativeTimeout
	goFuseLog := slog.NewLogLogger(log.Handler(), slog.LevelDebug)
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
			MaxBackground: maxBackground(cfg.KernelReadahead),
			Debug:         cfg.Debug,
			AllowOther:    cfg.AllowOther,
			Logger:        goFuseLog,
			PanicHandler: func(v any) fuse.Status {
				onPanic(v)
				return fuse.EIO
			},
		},
		Logger: goFuseLog,
	}
	opts.MountOptions.Options = []string{"default_permissions"}
	if !cfg.writable {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	return opts
}

// maxBackground is the FUSE max_background of a mount whose kernel
// readahead is ra bytes (Config.KernelReadahead): how many READs of
// readahead the kernel keeps in flight. From 3/4 of it (the congestion
// threshold, go-fuse's default) fuse_readahead skips the asynchronous part
// of each window, after the page cache has allocated its folios, and frees
// them again; the reader then allocates them once more when it gets there.
// Chunk files barely notice (their pages are mostly pushed, see placer),
// but a flat file (.npy, netCDF) is read by READs alone, and at go-fuse's
// default of 12 its reader spent a third of its time on folios dropped
// that way (docs/netcdf.md#measured). One sequential reader keeps up to
// two windows in flight, the one it reads and the next, so four windows
// of requests put the threshold at three; never less than go-fuse's 12.
func maxBackground(ra int64) int {
	return min(max(12, int(4*ra/requestSize)), 1<<10)
}

// Mount mounts t read-only at dir and serves it until the returned server
// is unmounted (srv.Unmount, or fusermount3 -u); srv.Wait waits for that.
// ctx is for reading the root metadata only. A Tree for metadata only
// (without tree.Config.Chunks) is refused: tree.ErrNoChunks.
//
// Auto serves through NoOpen where the kernel offers it (see choose). The
// path chosen is logged at Info, or at Warn with the reason when it is not
// the one asked for.
func Mount(ctx context.Context, dir string, t *tree.Tree, cfg Config) (*Server, error) {
	if t.MetadataOnly() {
		return nil, fmt.Errorf("mount %s: %w", dir, tree.ErrNoChunks)
	}
	log := t.Log()
	opts := FUSEOptions(cfg, log)
	if r := t.Refresh(); r > 0 {
		timeout, negative := min(attrTimeout, r), min(negativeTimeout, r)
		opts.EntryTimeout, opts.AttrTimeout, opts.NegativeTimeout = &timeout, &timeout, &negative
	}
	m := &mount{born: time.Now(), ready: make(chan struct{}), onLookup: cfg.onLookup}
	m.place.n = &m.n
	if !strings.HasPrefix(dir, "/dev/fd/") && !cfg.noIntroduce { // a descriptor mounted elsewhere has no path to look up through
		if abs, err := filepath.Abs(dir); err == nil {
			m.place.mnt = abs
		}
	}
	root, err := t.Root(ctx)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	m.place.setDir(nil, root) // a store whose root is an array
	c, err := serve(dir, newDirNode(t, root, m), opts, cfg.Transport, log, &m.after)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	logTransport(log, dir, cfg.Transport, c.Transport, c.Why)
	m.guard = startGuard(dir)
	go func() {
		c.Wait()
		m.close()
	}()
	// Opens wait for this: under NoOpen the first OPEN's ENOSYS decides
	// for the whole connection.
	m.serving, m.refused = choose(c.Server, cfg.Serving)
	// On the page-cache paths, prefetched chunks go into the kernel's page
	// cache before their first read.
	t.SetServing(m.serving == Passthrough, &m.place)
	close(m.ready)
	logServing(log, m, dir, cfg.Serving)
	if cfg.KernelReadahead > 0 {
		bdi, from, err := SetKernelReadahead(dir, cfg.KernelReadahead)
		if err != nil {
			log.Debug("kernel readahead left as it was", "mountpoint", dir, "err", err)
		} else {
			log.Info("kernel readahead raised", "mountpoint", dir, "bdi", bdi, "from_kb", from, "to_kb", cfg.KernelReadahead>>10)
		}
	}
	return &Server{Conn: c, m: m}, nil
}

// logServing logs the serving path m chose at dir, at Warn when it is not
// the one wanted.
func logServing(log *slog.Logger, m *mount, dir string, wanted Serving) {
	attrs := []any{"serving", m.serving.String(), "mountpoint", dir}
	switch {
	case m.serving == Passthrough:
	case m.place.mnt == "":
		attrs = append(attrs, "first_reads", "prefetched chunks pushed into the page cache of files the kernel knows (a /dev/fd mountpoint has no path to look others up through)")
	default:
		attrs = append(attrs, "first_reads", "prefetched chunks pushed into the page cache")
	}
	if m.refused != "" {
		attrs = append(attrs, "why", m.refused)
	}
	if wanted != Auto && wanted != m.serving {
		log.Warn("serving path falls back", append(attrs, "wanted", wanted.String())...)
	} else {
		log.Info("serving path", attrs...)
	}
}

// SetKernelReadahead sets the readahead of the file system mounted at dir
// to n bytes, in /sys/class/bdi/MAJOR:MINOR/read_ahead_kb, where MAJOR:MINOR
// is the mount's device number (see Config.KernelReadahead). It needs
// root. It returns the bdi name and the previous value in KiB.
func SetKernelReadahead(dir string, n int64) (bdi string, fromKB int64, err error) {
	if os.Geteuid() != 0 {
		return "", 0, fmt.Errorf("not root")
	}
	if bdi, err = mountDevice(dir); err != nil {
		return "", 0, err
	}
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

// Mounted reports whether dir is a mount point, from /proc/self/mountinfo
// (see topDevice: it does not stat dir, so a stale mount counts).
func Mounted(dir string) (bool, error) {
	dev, err := topDevice(dir)
	return dev != "", err
}

// mountDevice returns the device number ("0:52") of the file system mounted
// at dir.
func mountDevice(dir string) (string, error) {
	dev, err := topDevice(dir)
	if err == nil && dev == "" {
		err = fmt.Errorf("%s is not in /proc/self/mountinfo", dir)
	}
	return dev, err
}

// topDevice returns the device number of the top file system mounted at
// dir, from /proc/self/mountinfo, or "" if none is. It does not stat dir:
// that would fill the kernel's attribute cache for the mount's root for an
// hour, and a stale mount (its server killed) would then look alive to stat.
// The symlinks of dir's parents are resolved, as the kernel names mount
// points.
func topDevice(dir string) (string, error) {
	m, _, err := mountinfo.At(dir)
	return m.Dev, err
}
