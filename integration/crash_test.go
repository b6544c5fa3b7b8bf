package integration

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
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
