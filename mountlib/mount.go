// Package mountlib is the life of a mount, from the checks before it to
// the counters after it, as rclone's cmd/mountlib is: Mount checks the
// mountpoint (and clears a stale zfuse mount there), mounts the tree with
// fusemount, says when it is ready, serves until it is unmounted or its
// context ends, writes the stats file on SIGUSR1 and at the end, and logs
// the mount's last line.
//
// The one fact to know: it never waits on the mountpoint in this process.
// A mountpoint whose server is stuck would hold a thread for ever (over
// FUSE over io_uring, unkillably), so it is stat'ed from a child process,
// this binary run again (StatProbe), and the mount table is read rather
// than the directory.
package mountlib

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
)

// A Config is a mount to make.
type Config struct {
	Source string     // SOURCE as given: the mount table and the logs show it as Display says
	Dir    string     // MOUNTPOINT, or /dev/fd/N (a /dev/fuse descriptor a privileged parent mounted)
	Tree   *tree.Tree // what the mount serves
	// FUSE is how fusemount mounts and serves it; its FsName is Source's
	// Display, whatever it says.
	FUSE fusemount.Config
	// AllowNonEmpty mounts over a directory that holds files, which the
	// mount hides while it lasts; refused otherwise.
	AllowNonEmpty bool
	// MemLimit is the soft memory limit to set (debug.SetMemoryLimit),
	// unless GOMEMLIMIT sets one; 0: none.
	MemLimit int64
	// StatsFile, if not "", is where the counters are written as JSON
	// (StatsDoc) on SIGUSR1 and at unmount.
	StatsFile string
	Stats     func() readahead.Stats // the loader's counters
	// GPU, if not nil, has its counters logged at unmount.
	GPU *gpu.Decoder
	// StartProfile, if not nil, starts a CPU profile once the checks are
	// passed; the function it returns stops it, after the mount.
	StartProfile func() (stop func(), err error)
	// Mounted, if not nil, is called with the server once it is mounted,
	// before "mounted" is logged (metrics, the pressure watcher); Ready,
	// if not nil, after (a background parent waiting for the mount).
	Mounted func(*fusemount.Server)
	Ready   func()
	Log     *slog.Logger // nil means discard
}

// Mount serves c.Tree at c.Dir until ctx ends (SIGINT/SIGTERM: it then
// unmounts, waiting while the mountpoint is busy) or someone unmounts it
// (fusermount3 -u), then logs the counters and returns nil. Failures
// before the mount (a stats file that cannot be written, a mountpoint
// refused or not mounted) are its errors.
func Mount(ctx context.Context, c Config) error {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkStatsFile(c.StatsFile); err != nil {
		return err
	}
	if err := checkMountpoint(log, c.Dir, c.AllowNonEmpty); err != nil {
		return err
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && c.MemLimit > 0 {
		debug.SetMemoryLimit(c.MemLimit)
		log.Debug("soft memory limit", "bytes", c.MemLimit)
	}
	if c.StartProfile != nil {
		stop, err := c.StartProfile()
		if err != nil {
			return err
		}
		defer stop()
	}
	// SIGUSR1 is caught from before the mount is announced: a SIGUSR1
	// sent on seeing "mounted" must write the stats file, not be lost
	// (or, uncaught, end the process).
	usr1 := make(chan os.Signal, 1)
	if c.StatsFile != "" {
		signal.Notify(usr1, syscall.SIGUSR1)
		defer signal.Stop(usr1)
	}
	c.FUSE.FsName = Display(c.Source)
	srv, err := fusemount.Mount(ctx, c.Dir, c.Tree, c.FUSE)
	if err != nil {
		return err
	}
	if c.Mounted != nil {
		c.Mounted(srv)
	}
	log.Info("mounted", "source", c.FUSE.FsName, "mountpoint", c.Dir)
	if c.Ready != nil {
		c.Ready()
	}
	serveUntil(ctx, log, srv, c.Dir, c, usr1)
	st, ss := c.Stats(), srv.Stats()
	logUnmounted(log, c.Dir, st, ss)
	if c.GPU != nil {
		log.Info("GPU decoder", "stats", c.GPU.Stats())
	}
	if c.StatsFile != "" {
		return writeStats(c.StatsFile, st, ss)
	}
	return nil
}

// Display is SOURCE as the mount table and the logs show it: an absolute
// path for a directory, a URL without credentials or query for a remote
// store (store.Redact).
func Display(source string) string {
	if strings.Contains(source, "://") {
		return store.Redact(source)
	}
	if abs, err := filepath.Abs(source); err == nil {
		return abs
	}
	return source
}

// logUnmounted logs the mount's last line: a short summary at Info, and
// every counter at Debug (and in the stats file, for --stats-file).
func logUnmounted(log *slog.Logger, dir string, st readahead.Stats, ss fusemount.ServeStats) {
	var requests int64
	for _, n := range ss.Requests {
		requests += n
	}
	log.Info("unmounted", "mountpoint", dir, "chunk_reads", st.Reads, "decoded_hits", st.DecodedHits,
		"prefetch_used", st.PrefetchUsed, "store_reads", st.StoreReads, "fuse_requests", requests, "errors", ss.DecodeErrors)
	log.Debug("unmounted: the counters", "mountpoint", dir, "stats", st, "serve", ss)
}

// serveUntil waits until srv is unmounted, or until ctx ends and then
// unmounts it (unless the parent that mounted it does), writing the stats
// file on each SIGUSR1 (usr1) meanwhile.
func serveUntil(ctx context.Context, log *slog.Logger, srv *fusemount.Server, dir string, c Config, usr1 <-chan os.Signal) {
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	for {
		select {
		case <-usr1:
			if err := writeStats(c.StatsFile, c.Stats(), srv.Stats()); err != nil {
				log.Warn("cannot write the stats file", "err", err)
			}
		case <-done:
			return
		case <-ctx.Done():
			if passedFuseFd(dir) {
				return // the parent mounted it, and unmounts it: stop serving
			}
			unmount(log, srv, dir, done)
			return
		}
	}
}

// checkStatsFile refuses a --stats-file that could not be written, before
// mounting (as --log-file and --metrics are refused): it is written at
// unmount, too late to learn that its directory is missing.
func checkStatsFile(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("--stats-file %s is a directory", path)
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("--stats-file %s: cannot write in %s: %w", path, dir, err)
	}
	return nil
}

// A StatsDoc is what --stats-file holds.
type StatsDoc struct {
	Time       time.Time            `json:"time"`
	Pid        int                  `json:"pid"`
	Goroutines int                  `json:"goroutines"` // when written: a leak shows as growth between two
	Stats      readahead.Stats      `json:"stats"`
	Serve      fusemount.ServeStats `json:"serve"`
}

// writeStats writes s to path as JSON, atomically: readers see the old
// file or the new one, never half of one.
func writeStats(path string, s readahead.Stats, ss fusemount.ServeStats) error {
	b, err := json.MarshalIndent(StatsDoc{Time: time.Now(), Pid: os.Getpid(), Goroutines: runtime.NumGoroutine(), Stats: s, Serve: ss}, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("stats file: %w", err)
	}
	return nil
}

// unmount unmounts the server and waits until it has stopped. Unmounting
// fails while a process uses the mount (EBUSY): say so once, and keep
// trying until it is free.
func unmount(log *slog.Logger, srv interface{ Unmount() error }, dir string, done <-chan struct{}) {
	for warned := false; ; warned = true {
		err := srv.Unmount()
		if err == nil {
			break
		}
		if !warned {
			log.Warn("cannot unmount yet: the mountpoint is busy; close files and leave directories under it", "mountpoint", dir, "err", err)
		}
		select {
		case <-done: // unmounted by someone else
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	<-done
}

// passedFuseFd reports whether dir is /dev/fd/N: a /dev/fuse descriptor
// that a privileged parent mounted (see checkMountpoint).
func passedFuseFd(dir string) bool {
	n, ok := strings.CutPrefix(dir, "/dev/fd/")
	fd, err := strconv.Atoi(n)
	return ok && err == nil && fd > 0
}
