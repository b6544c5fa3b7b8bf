package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/zfuse/zfuse/fs"
)

// mount serves tree at dir until ctx ends (SIGINT/SIGTERM) or someone
// unmounts it (fusermount3 -u), then returns nil.
func mount(ctx context.Context, log *slog.Logger, tree *fs.Tree, source, dir string, debug bool) error {
	if err := checkMountpoint(dir); err != nil {
		return err
	}
	abs, _ := filepath.Abs(source)
	srv, err := fs.Mount(ctx, dir, tree, fs.MountConfig{FsName: abs, Debug: debug})
	if err != nil {
		return err
	}
	log.Info("mounted", "source", abs, "mountpoint", dir)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		unmount(log, srv, dir, done)
	}
	log.Info("unmounted", "mountpoint", dir)
	return nil
}

// unmount unmounts the server and waits until it has stopped. Unmounting
// fails while a process uses the mount (EBUSY): say so once, and keep
// trying until it is free.
func unmount(log *slog.Logger, srv *fuse.Server, dir string, done <-chan struct{}) {
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

// checkMountpoint explains the usual reasons a mount would fail.
func checkMountpoint(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return fmt.Errorf("mountpoint %s is a stale FUSE mount (its server died); clear it with: fusermount3 -u %s", dir, dir)
	case err != nil:
		return fmt.Errorf("mountpoint: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if on, err := mounted(dir); err == nil && on {
		return fmt.Errorf("mountpoint %s is busy: something is already mounted there (unmount it with: fusermount3 -u %s)", dir, dir)
	}
	return nil
}

// mounted reports whether dir is a mount point, from /proc/self/mountinfo.
func mounted(dir string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Field 5 is the mount point, with spaces etc. escaped as \040.
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && unescape(fields[4]) == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
