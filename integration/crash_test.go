package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// A reader is one checkedreads.py process started in the background.
type reader struct {
	cmd   *exec.Cmd
	ready chan struct{} // closed when it printed "ready" (one read done)
	done  chan struct{} // closed when it exited; then res and err are set
	res   tally
	err   error
}

// startReader starts checkedreads.py files on m with args; it ends when the
// test does, at the latest.
func startReader(t *testing.T, m *mounted, want string, args ...string) *reader {
	t.Helper()
	r := &reader{ready: make(chan struct{}), done: make(chan struct{})}
	argv := append([]string{filepath.Join(repo, "integration", "testdata", "checkedreads.py"), "files", m.Dir, want}, args...)
	r.cmd = exec.CommandContext(t.Context(), testutil.Python, argv...)
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		last := ""
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(r.ready)
			}
			last = sc.Text()
		}
		r.err = r.cmd.Wait()
		if err := json.Unmarshal([]byte(last), &r.res); err != nil && r.err == nil {
			r.err = err
		}
	}()
	return r
}

// TestCrashRestart: zfuse SIGKILLed while four processes read through it
// (each dropping the page cache before every read, so that reads reach
// the mount): every reader gets an error within seconds, never a hang,
// and none got a wrong byte before; zfuse mount on the same mountpoint
// then clears the stale mount itself, saying so, and the new mount reads
// everything right.
func TestCrashRestart(t *testing.T) {
	dir := stores(t, "small")
	src, want := filepath.Join(dir, "src"), filepath.Join(dir, "want")
	flags := []string{"--as-v2", "--cache-decoded", "4MiB", "--readahead", "4MiB"}
	// After "mounted" (mount waits for it): a zfuse killed before hangs in
	// its own FLUSH (go-fuse's poll hack), and so would its readers.
	m := mount(t, src, flags...)
	var rs []*reader
	for i, order := range []string{"seq", "random", "stride", "sub"} {
		rs = append(rs, startReader(t, m, want, "--order", order, "--threads", "2", "--seconds", "120", "--drop",
			"--stop-on-error", "--ready", "--seed", string(rune('1'+i))))
	}
	for _, r := range rs {
		select {
		case <-r.ready:
		case <-r.done:
			t.Fatalf("a reader ended before its first read: %v %v", r.err, r.res)
		case <-time.After(time.Minute):
			t.Fatalf("no reader read within a minute:\n%s", m.Stderr)
		}
	}
	if err := m.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-m.exited
	killed := time.Now()
	for i, r := range rs {
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			r.cmd.Process.Kill()
			<-r.done
			t.Errorf("reader %d still reading 30 s after zfuse was killed: a hang", i)
			continue
		}
		t.Logf("reader %d: %v, ended %v after the kill", i, r.res, time.Since(killed).Round(time.Millisecond))
		if r.res.Wrong > 0 {
			t.Errorf("reader %d read wrong bytes: %v", i, r.res)
		}
		if len(r.res.Errors) == 0 && r.res.EIO == 0 {
			t.Errorf("reader %d ended without an error: %v (%v)", i, r.res, r.err)
		}
	}
	if !isMounted(t, m.Dir) {
		t.Fatalf("nothing left mounted at %s after the kill: the test proves nothing of the restart", m.Dir)
	}
	again := startMountAt(t, zfuse, src, m.Dir, flags...)
	if !strings.Contains(again.Stderr.String(), "cleared a stale mount") {
		t.Errorf("the new mount did not say it cleared the stale one:\n%s", again.Stderr)
	}
	res := checkedReaders(t, again, want, 2*time.Minute, []string{"files", "--threads", "4", "--order", "random"}, append([]string{"zarr"}, reliabilityArrays...))
	if res.Wrong > 0 || res.EIO > 0 || len(res.Errors) > 0 || res.OK != res.Reads {
		t.Errorf("reading through the new mount: %v", res)
	}
	again.stop(t, syscall.SIGTERM)
}

// TestStaleMountAfterRead: a zfuse SIGKILLed after its root was listed
// and stat'ed (so that the kernel holds the root's attributes) still
// leaves a stale mount that the next zfuse mount clears; the check once
// asked the kernel's cached attributes and called the mountpoint busy.
// On every serving path (ZFUSE_SERVING), foreground and background.
func TestStaleMountAfterRead(t *testing.T) {
	dir := stores(t, "small")
	src := filepath.Join(dir, "src")
	t.Run("foreground", func(t *testing.T) {
		m := mount(t, src)
		readRoot(t, m.Dir)
		if err := m.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-m.exited
		if !isMounted(t, m.Dir) {
			t.Fatalf("nothing left mounted at %s after the kill", m.Dir)
		}
		again := startMountAt(t, zfuse, src, m.Dir)
		if !strings.Contains(again.Stderr.String(), "cleared a stale mount") {
			t.Errorf("the new mount did not say it cleared the stale one:\n%s", again.Stderr)
		}
		readRoot(t, m.Dir)
		again.stop(t, syscall.SIGTERM)
	})
	t.Run("background", func(t *testing.T) {
		mnt := t.TempDir()
		pidOf := func() int {
			_, stderr, err := run("mount", "-d", "--log-file", filepath.Join(t.TempDir(), "log"), src, mnt)
			if err != nil {
				t.Fatalf("zfuse mount -d: %v\n%s", err, stderr)
			}
			out, err := exec.Command("pgrep", "-n", "-f", "zfuse.* mount .*"+mnt).Output()
			pid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil || perr != nil {
				t.Fatalf("no zfuse process serving %s: %v %v", mnt, err, perr)
			}
			return pid
		}
		pid := pidOf()
		readRoot(t, mnt)
		syscall.Kill(pid, syscall.SIGKILL)
		for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; {
			if time.Now().After(deadline) {
				t.Fatalf("zfuse %d still alive 10 s after SIGKILL", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		pid = pidOf()
		readRoot(t, mnt)
		syscall.Kill(pid, syscall.SIGTERM)
		for deadline := time.Now().Add(10 * time.Second); isMounted(t, mnt); {
			if time.Now().After(deadline) {
				t.Fatalf("%s still mounted 10 s after SIGTERM", mnt)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// readRoot lists and stats the root of a mount, as ls -l does.
func readRoot(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("listing %s: %v entries, %v", dir, len(entries), err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := e.Info(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStuckMountpoint: zfuse mount on a mountpoint whose server is alive
// but does not answer (here a zfuse stopped with SIGSTOP; in life, one
// killed in the first milliseconds of its mount) gives up within seconds
// and says how to abort the connection, instead of hanging in stat.
func TestStuckMountpoint(t *testing.T) {
	dir := stores(t, "small")
	m := mount(t, filepath.Join(dir, "src")) // nothing has stat'ed its root: the kernel must ask
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer m.cmd.Process.Signal(syscall.SIGCONT)
	start := time.Now()
	_, stderr, err := run("mount", filepath.Join(dir, "src"), m.Dir)
	took := time.Since(start)
	if err == nil || !strings.Contains(string(stderr), "does not answer") || !strings.Contains(string(stderr), "/sys/fs/fuse/connections/") ||
		!strings.Contains(string(stderr), "fusermount3 -u -z "+m.Dir) {
		t.Errorf("mount on a stuck mountpoint: %v, %s; want a refusal saying how to abort it", err, stderr)
	}
	if took > 30*time.Second {
		t.Errorf("gave up after %v", took)
	}
}

// TestKillWhileLookingUp: zfuse SIGKILLed while it looks chunk files up
// through its own mount (to push prefetched chunks into the page cache of
// files a reader opens by name, without listing) exits, and its readers
// get errors, within seconds, every time. A thread of the server waiting
// inside its own mount once made it unkillable, and the mount and every
// reader hung for good (the kernel waits for an answer only the dead
// server could give); the lookups now come from a child process.
func TestKillWhileLookingUp(t *testing.T) {
	dir := stores(t, "load")
	src := filepath.Join(dir, "src")
	// Every chunk file of v2.zarr/small (12x8x2 chunks of 4 KiB), by name,
	// in grid order, as zarr-python opens them, from one process (readahead
	// follows processes), round and round, dropping each file's pages after
	// reading it (not drop_caches: other tests' pages are theirs); it ends
	// at the first error.
	script := `import os, sys
d = os.path.join(sys.argv[1], "v2.zarr", "small")
while True:
    for i in range(12):
        for j in range(8):
            for k in range(2):
                try:
                    with open(os.path.join(d, f"{i}.{j}.{k}"), "rb") as f:
                        f.read()
                        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                except OSError:
                    sys.exit(0)
`
	for round := range 20 {
		m := mount(t, src, "--readahead", "4MiB")
		reader := exec.Command(testutil.Python, "-c", script, m.Dir)
		if err := reader.Start(); err != nil {
			t.Fatal(err)
		}
		readerDone := make(chan error, 1)
		go func() { readerDone <- reader.Wait() }()
		time.Sleep(time.Duration(100+round*37) * time.Millisecond)
		if err := m.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-m.exited:
		case <-time.After(15 * time.Second):
			stacks := kernelStacks(m.cmd.Process.Pid)
			abortConnection(t, m.Dir)
			reader.Process.Kill()
			<-m.exited
			<-readerDone
			t.Fatalf("round %d: zfuse still alive 15 s after SIGKILL (a thread inside its own mount?); aborted the connection; its threads in the kernel:\n%s", round, stacks)
		}
		select {
		case <-readerDone:
		case <-time.After(15 * time.Second):
			abortConnection(t, m.Dir)
			reader.Process.Kill()
			<-readerDone
			t.Fatalf("round %d: a reader still reading 15 s after zfuse was killed", round)
		}
		if err := exec.Command("fusermount3", "-u", "-z", m.Dir).Run(); err != nil {
			t.Fatalf("round %d: clearing the stale mount: %v", round, err)
		}
	}
}

// kernelStacks returns where each thread of process pid is in the kernel
// (/proc/PID/task/TID/stack, root only), to tell what a hung one waits on.
func kernelStacks(pid int) string {
	var b strings.Builder
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		stat, _ := os.ReadFile(filepath.Join(task, "stat"))
		stack, _ := os.ReadFile(filepath.Join(task, "stack"))
		fmt.Fprintf(&b, "%s\n%s\n", strings.TrimSpace(string(stat)), stack)
	}
	return b.String()
}

// abortConnection aborts the FUSE connection of the mount at dir
// (/sys/fs/fuse/connections/N/abort, N its device's minor number; fusectl
// mounted there first where it is not), so that a hung test can end.
func abortConnection(t *testing.T, dir string) {
	t.Helper()
	if es, _ := os.ReadDir("/sys/fs/fuse/connections"); len(es) == 0 {
		exec.Command("mount", "-t", "fusectl", "none", "/sys/fs/fuse/connections").Run()
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fields[4] == dir {
			_, minor, _ := strings.Cut(fields[2], ":")
			if err := os.WriteFile("/sys/fs/fuse/connections/"+minor+"/abort", []byte("1"), 0); err != nil {
				t.Errorf("aborting the connection of %s: %v", dir, err)
			}
			return
		}
	}
}
