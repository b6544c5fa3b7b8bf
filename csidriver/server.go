package csidriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// The server of a volume is `zfuse mount [flags] -- SOURCE /dev/fd/3`,
// serving the descriptor the driver mounted (mount.go). It runs:
//
//   - as the mounter user (setuid and setgid before exec, supplementary
//     groups cleared), so it holds no capabilities;
//   - in a session of its own, with nothing of the plugin's (no pipe, no
//     terminal, its log in the state directory), and optionally in a
//     cgroup of its own outside the plugin's (Config.Cgroup), so that it
//     outlives the plugin: a plugin that restarts finds it from its
//     record (state.go);
//   - with an environment of its own: the volume's secrets, and nothing of
//     the plugin's (no instance-role or pod-identity settings that would
//     lend a pod the node's credentials).
//
// It tells the driver that it is ready, or why it failed, by zfuse mount's
// readiness protocol (cmd/zfuse/background.go): with ZFUSE_READY_FD=N in its
// environment it writes JSON lines to descriptor N, {"ready":true} once
// the mount serves, {"error":"..."} if it cannot, {"warn":"..."} before.

// readyFd is the server's descriptor of the readiness pipe; 3 is the
// FUSE descriptor.
const readyFd = 4

// stopWait bounds each wait for a server to exit: after an unmount, then
// after SIGTERM; SIGKILL follows.
const stopWait = 10 * time.Second

// A serverConfig says how servers run.
type serverConfig struct {
	exe      string // the zfuse binary
	uid, gid int    // the mounter user
	cgroup   string // a cgroup v2 directory to run each server in a child of; "" for the plugin's own
	log      *slog.Logger
}

// A proc names one server process: its pid and its start time, which
// tells it from a later process given the same pid.
type proc struct {
	pid   int
	start uint64
}

// startServer starts the server of settings s on the mounted descriptor
// dev, logging to logPath, in the cgroup cg if not "", and waits until it
// serves or fails. A server that fails is gone when startServer returns,
// and the error says why in the server's words.
func startServer(ctx context.Context, c serverConfig, s Settings, dev *os.File, logPath, cg string) (proc, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return proc{}, err
	}
	defer logf.Close()
	if err := logf.Chown(c.uid, c.gid); err != nil {
		return proc{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return proc{}, err
	}
	defer r.Close()
	args := append(append([]string{"mount"}, s.Flags...), "--log-file="+logPath, "--", s.Source, "/dev/fd/3")
	cmd := exec.Command(c.exe, args...)
	cmd.Env = append([]string{"HOME=/nonexistent", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"AWS_EC2_METADATA_DISABLED=true", "ZFUSE_READY_FD=" + strconv.Itoa(readyFd)}, s.Env...)
	cmd.Stderr = logf // a crash's last words, beside the log
	cmd.ExtraFiles = []*os.File{dev, w}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.gid), Groups: []uint32{}},
	}
	if cg != "" {
		fd, err := enterCgroup(cg, s)
		if err != nil {
			w.Close()
			return proc{}, err
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return proc{}, fmt.Errorf("start the server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it, whenever it exits
	p := proc{pid: cmd.Process.Pid}
	if err := awaitReady(ctx, c.log, r, exited); err != nil {
		cmd.Process.Kill()
		<-exited
		return proc{}, err
	}
	if p.start, err = startTime(p.pid); err != nil {
		return proc{}, fmt.Errorf("the server: %w", err)
	}
	return p, nil
}

// enterCgroup creates the cgroup directory cg, sets its memory.max to the
// memory limit of s where it has one, and returns a descriptor of it for
// clone(2) to start the server in (CLONE_INTO_CGROUP).
func enterCgroup(cg string, s Settings) (int, error) {
	if err := os.Mkdir(cg, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return -1, fmt.Errorf("server cgroup: %w", err)
	}
	if limit := s.memoryLimit(); limit > 0 {
		max := filepath.Join(cg, "memory.max")
		if _, err := os.Stat(max); err == nil { // no memory controller there: zfuse's own sizing only
			if err := os.WriteFile(max, []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
				return -1, fmt.Errorf("server cgroup: %w", err)
			}
		}
	}
	fd, err := unix.Open(cg, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("server cgroup: %w", &os.PathError{Op: "open", Path: cg, Err: err})
	}
	return fd, nil
}

// memoryLimit returns the bytes of the memory-limit flag, or 0.
func (s Settings) memoryLimit() int64 {
	for _, f := range s.Flags {
		if v, ok := strings.CutPrefix(f, "--memory-limit="); ok {
			n, _ := bytesize.Parse(v) // a bad value fails the server, which says so
			return n
		}
	}
	return 0
}

// awaitReady reads the server's readiness messages from r until it is
// ready (nil) or has failed, exited or run out of ctx (an error).
func awaitReady(ctx context.Context, log *slog.Logger, r *os.File, exited <-chan error) error {
	type msg struct {
		Warn  string `json:"warn"`
		Error string `json:"error"`
		Ready bool   `json:"ready"`
	}
	msgs, done := make(chan msg), make(chan struct{})
	defer close(done)
	go func() { // ends at EOF (the server closed the pipe or exited), or once we are done
		defer close(msgs)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m msg
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()
	for {
		select {
		case m, ok := <-msgs:
			switch {
			case !ok:
				return fmt.Errorf("the server exited before it served: %v", <-exited)
			case m.Ready:
				return nil
			case m.Error != "":
				return errors.New(m.Error)
			case m.Warn != "":
				log.Warn("server: " + m.Warn)
			}
		case <-ctx.Done():
			r.Close() // ends the reader's read
			return fmt.Errorf("the server was not ready in time: %w", ctx.Err())
		}
	}
}

// startTime returns the start time of process pid, in clock ticks since
// boot (field 22 of /proc/PID/stat).
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold anything;
	// the fields after the last ")" start with field 3.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// open returns a pidfd of p, or ok false when p has exited (or its pid
// now names another process).
func (p proc) open() (fd int, ok bool) {
	if p.pid <= 0 {
		return -1, false
	}
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return -1, false
	}
	// The pidfd pins the process: checked after opening it, the start
	// time cannot change under us.
	if st, err := startTime(p.pid); err != nil || st != p.start || zombie(p.pid) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// alive reports whether p is still running.
func (p proc) alive() bool {
	fd, ok := p.open()
	if ok {
		unix.Close(fd)
	}
	return ok
}

// zombie reports whether process pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// stop waits until p has exited: it does so by itself once its mount is
// unmounted. One that has not within stopWait gets SIGTERM (a server of a
// /dev/fd mount then stops serving and exits), then SIGKILL. It reports
// whether a signal was needed.
func (p proc) stop() (signalled bool, err error) {
	fd, ok := p.open()
	if !ok {
		return false, nil
	}
	defer unix.Close(fd)
	for _, sig := range []unix.Signal{0, unix.SIGTERM, unix.SIGKILL} {
		if sig != 0 {
			signalled = true
			if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				return signalled, fmt.Errorf("signal the server (pid %d): %w", p.pid, err)
			}
		}
		if exitedWithin(fd, stopWait) {
			return signalled, nil
		}
	}
	return signalled, fmt.Errorf("the server (pid %d) did not exit after SIGKILL", p.pid)
}

// exitedWithin reports whether the process of pidfd fd exits within d: a
// pidfd polls readable once its process has exited.
func exitedWithin(fd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return false
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if err == nil && n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}
