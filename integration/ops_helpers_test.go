package integration

// Helpers for the operations tests (ops_test.go): a reverse proxy that
// counts responses by status and can fail a request once, Prometheus
// scrapes, and the pid and exit of a background mount (not a child of the
// test).

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A statusProxy forwards to a server, counting responses by "METHOD
// status" to requests for values (not metadata documents), delaying each
// request by delay, answering 503 to the first GET of a path given to
// failOnce and 403 to every GET of a path given to deny.
type statusProxy struct {
	URL   string
	delay atomic.Int64 // nanoseconds

	mu       sync.Mutex
	counts   map[string]int  // "GET 200" -> responses
	failOnce map[string]bool // path -> not yet failed
	deny     map[string]bool // path -> refused
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

func startStatusProxy(t testing.TB, target string) *statusProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	rp.Transport = tr
	p := &statusProxy{counts: map[string]int{}, failOnce: map[string]bool{}, deny: map[string]bool{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(p.delay.Load()); d > 0 {
			time.Sleep(d) // the emulated latency itself
		}
		rec := &statusRecorder{w, http.StatusOK}
		p.mu.Lock()
		fail := r.Method == http.MethodGet && p.failOnce[r.URL.Path]
		if fail {
			delete(p.failOnce, r.URL.Path)
		}
		deny := r.Method == http.MethodGet && p.deny[r.URL.Path]
		p.mu.Unlock()
		switch {
		case deny:
			http.Error(rec, "forbidden", http.StatusForbidden)
		case fail:
			http.Error(rec, "try again", http.StatusServiceUnavailable)
		default:
			rp.ServeHTTP(rec, r)
		}
		if !strings.Contains(r.URL.Path, "/.z") && !strings.HasSuffix(r.URL.Path, "/zarr.json") { // values only
			p.mu.Lock()
			p.counts[fmt.Sprintf("%s %d", r.Method, rec.code)]++
			p.mu.Unlock()
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	p.URL = "http://" + l.Addr().String()
	return p
}

// failFirst has the first GET of path fail with 503.
func (p *statusProxy) failFirst(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failOnce[path] = true
}

// refuse has every GET of path fail with 403.
func (p *statusProxy) refuse(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny[path] = true
}

// take returns the responses to requests for values (not metadata
// documents) since the last take, by "METHOD status".
func (p *statusProxy) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = map[string]int{}
	return c
}

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
