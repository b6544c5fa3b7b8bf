package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/mountinfo"
)

// statTimeout bounds how long checkMountpoint waits for stat of the
// mountpoint: a FUSE server that is alive but stuck (a zfuse killed in
// the first milliseconds of its mount hangs in its own FLUSH) never
// answers, and stat would wait for ever.
const statTimeout = 5 * time.Second

// checkMountpoint explains the usual reasons a mount would fail, and
// clears the mountpoint itself where that is safe: a stale zfuse mount,
// whose zfuse died (SIGKILL, a crash, the OOM killer) and whose kernel
// connection is gone (stat says ENOTCONN), serves nothing to anyone, so it
// is unmounted (fusermount3 -u, lazily if a process still holds a file
// there) with a warning on log. Anything else is left alone and refused
// with the command that clears it: a live mount, a stale mount of another
// file system, a mountpoint that does not answer. A mountpoint /dev/fd/N
// is libfuse's convention for a privileged parent that opened /dev/fuse,
// mounted it and passed it on as descriptor N: there is nothing to check.
func checkMountpoint(log *slog.Logger, dir string) error {
	if passedFuseFd(dir) {
		return nil
	}
	fi, err := statWithin(dir, statTimeout)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		m := mountOf(dir)
		if m.FSType != "fuse.zfuse" {
			return fmt.Errorf("mountpoint %s is a stale FUSE mount (%s; its server died); clear it with: fusermount3 -u %s", dir, m.FSType, dir)
		}
		if err := unmountStale(dir); err != nil {
			return fmt.Errorf("mountpoint %s is a stale zfuse mount (its zfuse died) that could not be cleared (%v); clear it with: fusermount3 -u -z %s", dir, err, dir)
		}
		log.Warn("cleared a stale mount a zfuse that died left on the mountpoint", "mountpoint", dir, "source", m.Source)
		if fi, err = statWithin(dir, statTimeout); err != nil {
			return fmt.Errorf("mountpoint: %w", err)
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		m := mountOf(dir)
		if m.FSType == "" {
			return fmt.Errorf("mountpoint %s does not answer within %v: the file system it lies in is stuck", dir, statTimeout)
		}
		return fmt.Errorf("mountpoint %s does not answer within %v: the server of the %s mount there (%s) is stuck; as root, abort it with: echo 1 > /sys/fs/fuse/connections/%s/abort; then clear it with: fusermount3 -u -z %s",
			dir, statTimeout, m.FSType, m.Source, m.Minor(), dir)
	case err != nil:
		return fmt.Errorf("mountpoint: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("mountpoint %s is not a directory", dir)
	}
	if on, err := fusemount.Mounted(dir); err == nil && on {
		return fmt.Errorf("mountpoint %s is busy: something is already mounted there (unmount it with: fusermount3 -u %s)", dir, dir)
	}
	return nil
}

// statWithin stats dir, giving up after d with an error wrapping
// os.ErrDeadlineExceeded. It asks the file system itself (statx
// AT_STATX_FORCE_SYNC): a FUSE mount whose server died answers ENOTCONN
// only to a request that reaches it, and the kernel answers a plain stat
// from the attributes it cached while the server was alive (after an ls,
// say). The stat runs in a child process (this binary again: probeStat),
// left behind when it does not answer: a thread of this process waiting
// there would keep it from exiting. Over FUSE over io_uring the kernel
// hands a request to the stuck server at once, and the wait for its
// answer can then be neither interrupted nor killed; the child waits for
// the server, or for its connection to be aborted.
func statWithin(dir string, d time.Duration) (fs.FileInfo, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// The answer comes through a pipe of our own: exec's StdoutPipe is
	// closed by Wait, which runs on its own here (the child may never end).
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, statProbe, dir) // stdin and stderr: /dev/null
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	go cmd.Wait() // reaped when it ends, whenever that is
	ch := make(chan string, 1)
	go func() {
		defer r.Close()
		b, _ := io.ReadAll(r)
		ch <- strings.TrimSpace(string(b))
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	var answer string
	select {
	case answer = <-ch:
	case <-t.C:
		cmd.Process.Kill() // ends it, unless it waits in the kernel
		return nil, fmt.Errorf("stat %s: no answer within %v: %w", dir, d, os.ErrDeadlineExceeded)
	}
	if n, ok := strings.CutPrefix(answer, "errno "); ok {
		e, err := strconv.Atoi(n)
		if err != nil {
			return nil, fmt.Errorf("stat %s: the probe said %q", dir, answer)
		}
		return nil, &fs.PathError{Op: "statx", Path: dir, Err: syscall.Errno(e)}
	}
	if answer != "ok" {
		return nil, fmt.Errorf("stat %s: the probe said %q", dir, answer)
	}
	return os.Stat(dir) // answered: the kernel has the attributes now
}

// statProbe is the first argument that makes this binary statWithin's
// child, probeStat.
const statProbe = "__zfuse-stat-probe"

// probeStat is statWithin's child: it stats dir through to its file
// system and prints "ok", or "errno N".
func probeStat(dir string) int {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_STATX_FORCE_SYNC, unix.STATX_TYPE, &st); err != nil {
		var e syscall.Errno
		if !errors.As(err, &e) {
			e = syscall.EIO
		}
		fmt.Printf("errno %d\n", int(e))
		return 0
	}
	fmt.Println("ok")
	return 0
}

// unmountStale unmounts the dead FUSE mount at dir: fusermount3 -u, and
// where a process still holds something under it, -u -z (the mount serves
// nothing, so detaching it loses nothing).
func unmountStale(dir string) error {
	out, err := exec.Command("fusermount3", "-u", dir).CombinedOutput()
	if err == nil {
		return nil
	}
	if out2, err2 := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput(); err2 != nil {
		return fmt.Errorf("fusermount3 -u: %v %s; -u -z: %v %s", err, strings.TrimSpace(string(out)), err2, strings.TrimSpace(string(out2)))
	}
	return nil
}

// mountOf returns the top mount at dir, from /proc/self/mountinfo (which
// does not stat dir, so a stale or stuck mount does not hang it), or the
// zero Mount. It resolves no symlinks: that would stat dir's parents,
// which may lie in the stuck file system.
func mountOf(dir string) mountinfo.Mount {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return mountinfo.Mount{}
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return mountinfo.Mount{}
	}
	m, _ := mountinfo.Top(ms, abs)
	return m
}
