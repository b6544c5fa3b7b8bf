package integration

// Helpers for the operations tests (ops_test.go): Prometheus scrapes, and
// the pid and exit of a background mount (not a child of the test).

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scrape reads the Prometheus text exposition at http://addr/metrics into
// a map from "name{labels}" (as printed) to value.
func scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// daemonPid returns the pid of the zfuse process serving mountpoint (its
// command line ends in it), or 0 if there is none.
func daemonPid(t testing.TB, mountpoint string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(args) > 2 && filepath.Base(args[0]) == "zfuse" && args[len(args)-1] == mountpoint {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// waitExit waits until the process pid (not a child of ours) has exited,
// on a pidfd, which becomes readable when it does.
func waitExit(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return // gone already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(within/time.Millisecond))
	if err != nil || n == 0 {
		t.Fatalf("zfuse (pid %d) did not exit within %v (%v)", pid, within, err)
	}
}

// cleanupDaemon makes sure, at the test's end, that nothing serves or is
// mounted at mountpoint.
func cleanupDaemon(t *testing.T, mountpoint string) {
	t.Cleanup(func() {
		if pid := daemonPid(t, mountpoint); pid != 0 {
			unix.Kill(pid, unix.SIGTERM)
			waitExit(t, pid, time.Minute)
		}
		if isMounted(t, mountpoint) {
			exec.Command("fusermount3", "-u", "-z", mountpoint).Run()
		}
	})
}

// checkLog fails unless the log file holds every one of want, and no
// report of the race detector.
func checkLog(t *testing.T, path string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("the log lacks %q:\n%s", w, b)
		}
	}
	if bytes.Contains(b, []byte("DATA RACE")) {
		t.Errorf("the race detector fired:\n%s", b)
	}
}
