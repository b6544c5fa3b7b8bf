package integration

// Real servers for the remote-store tests, all on 127.0.0.1: nginx from
// Debian (HTTP with byte ranges), versitygw's posix backend (S3), and a
// small reverse proxy in this process that counts requests and can add
// latency.

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// A process is a server the test started; stop and start restart it with
// the same arguments (and port).
type process struct {
	t      testing.TB
	name   string
	args   []string
	env    []string
	addr   string
	log    *syncBuffer
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func (p *process) start() {
	p.t.Helper()
	p.mu.Lock()
	p.cmd = exec.Command(p.name, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	p.exited = exited
	cmd := p.cmd
	go func() { cmd.Wait(); close(exited) }()
	p.mu.Unlock()
	if err := testutil.WaitListening(p.addr, exited, 30*time.Second); err != nil {
		p.t.Fatalf("%v\n%s", err, p.log)
	}
}

// stop ends the server and waits until it has exited.
func (p *process) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
}

// nginxBin finds Debian's nginx (in /usr/sbin, which may not be on PATH).
func nginxBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	p := "/usr/sbin/nginx"
	_, err := os.Stat(p)
	testutil.Need(t, "nginx (make deps: apt-get install nginx-light)", err == nil)
	return p
}

// startNginx serves root at http://127.0.0.1:<port>/ with nginx: byte
// ranges, ETags, and "dir" redirected to "dir/", as nginx does by default.
// Its access log lists every request.
func startNginx(t testing.TB, root string) (*process, string) {
	t.Helper()
	bin := nginxBin(t)
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root root;" // workers read the test's 0700 temp dirs
	}
	conf := fmt.Sprintf(`daemon off;
master_process on;
worker_processes 2;
%s
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log %[2]s/access.log;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	keepalive_requests 100000;
	server {
		listen %[3]s;
		root %[4]s;
	}
}
`, user, dir, addr, root)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &process{t: t, name: bin, args: []string{"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", cf}, addr: addr, log: &syncBuffer{}}
	p.start()
	t.Cleanup(p.stop)
	return p, "http://" + addr
}

// S3 credentials of the test gateway. They must appear in no log or output.
const (
	s3Access = "AKIDZFUSEINTEGRATION"
	s3Secret = "zfuse-integration-secret-7f3a"
)

// startVersitygw serves root/<bucket>/<key> as S3 (posix backend, no
// metadata in xattrs) and returns the endpoint. The credentials are
// s3Access and s3Secret.
func startVersitygw(t *testing.T, root string) (*process, string) {
	t.Helper()
	return startVersitygwWith(t, root, "--nometa")
}

// startVersitygwWith is startVersitygw with other options of the posix
// backend; without --nometa it keeps object metadata (ETags, multipart
// uploads) in extended attributes.
func startVersitygwWith(t *testing.T, root string, opts ...string) (*process, string) {
	t.Helper()
	bin := testutil.Versitygw(t)
	addr := testutil.FreeAddr(t)
	args := append(append([]string{"--port", addr, "posix"}, opts...), root)
	p := &process{t: t, name: bin, args: args, addr: addr, log: &syncBuffer{},
		env: []string{"ROOT_ACCESS_KEY_ID=" + s3Access, "ROOT_SECRET_ACCESS_KEY=" + s3Secret}}
	p.start()
	t.Cleanup(p.stop)
	return p, "http://" + addr
}

// s3Setenv gives this test's processes (zfuse among them) the gateway's
// credentials, and nothing from this machine's AWS setup.
func s3Setenv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": s3Access, "AWS_SECRET_ACCESS_KEY": s3Secret,
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", // never ask 169.254.169.254
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_PROFILE": "", "AWS_SESSION_TOKEN": "", "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
}

// A proxy forwards to a server, counting requests by "METHOD /path" (and
// responses to requests for values, not metadata documents, by "METHOD
// status"), delaying each by delay first (an emulated network round trip),
// refusing those that deny names, and answering 503 to the next GET of a
// path given to failFirst.
type proxy struct {
	URL   string
	delay atomic.Int64 // nanoseconds
	deny  atomic.Value // string: requests for paths ending in it get 403
	srv   *http.Server
	// inflight counts the requests being answered; peak is the most at
	// once since the last takePeak.
	inflight, peak atomic.Int64

	mu       sync.Mutex
	counts   map[string]int
	statuses map[string]int  // "GET 304" -> responses, for values
	failOnce map[string]bool // paths whose next GET fails
	failN    map[string]int  // paths whose next GETs fail, and how many more
	log      []string        // "METHOD /path" of each request, with an S3 listing's "?prefix=P"
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	rp.Transport = tr
	p := &proxy{counts: map[string]int{}, statuses: map[string]int{}, failOnce: map[string]bool{}, failN: map[string]int{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.counts[r.Method+" "+r.URL.Path]++
		l := r.Method + " " + r.URL.Path
		if q := r.URL.Query(); q.Has("prefix") {
			l += "?prefix=" + q.Get("prefix")
		}
		p.log = append(p.log, l)
		fail := r.Method == http.MethodGet && (p.failOnce[r.URL.Path] || p.failN[r.URL.Path] > 0)
		if fail {
			delete(p.failOnce, r.URL.Path)
			if p.failN[r.URL.Path]--; p.failN[r.URL.Path] <= 0 {
				delete(p.failN, r.URL.Path)
			}
		}
		p.mu.Unlock()
		rec := &statusRecorder{w, http.StatusOK}
		defer func() {
			if !strings.Contains(r.URL.Path, "/.z") && !strings.HasSuffix(r.URL.Path, "/zarr.json") {
				p.mu.Lock()
				p.statuses[fmt.Sprintf("%s %d", r.Method, rec.code)]++
				p.mu.Unlock()
			}
		}()
		if deny, _ := p.deny.Load().(string); deny != "" && strings.HasSuffix(r.URL.Path, deny) {
			http.Error(rec, "forbidden", http.StatusForbidden)
			return
		}
		if fail {
			http.Error(rec, "try again", http.StatusServiceUnavailable)
			return
		}
		n := p.inflight.Add(1)
		defer p.inflight.Add(-1)
		for {
			if old := p.peak.Load(); n <= old || p.peak.CompareAndSwap(old, n) {
				break
			}
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			time.Sleep(d) // the emulated latency itself
		}
		rp.ServeHTTP(rec, r)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.srv.Serve(l)
	t.Cleanup(func() { p.srv.Close() })
	p.URL = "http://" + l.Addr().String()
	return p
}

// count returns the requests of method whose path ends in suffix.
func (p *proxy) count(method, suffix string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, c := range p.counts {
		m, path, _ := strings.Cut(k, " ")
		if m == method && strings.HasSuffix(path, suffix) {
			n += c
		}
	}
	return n
}

// reset forgets the counts.
func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts = map[string]int{}
	p.statuses = map[string]int{}
}

// failFirst has the next GET of path fail with 503.
func (p *proxy) failFirst(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failOnce[path] = true
}

// failFor has the next n GETs of path fail with 503 (0: none).
func (p *proxy) failFor(path string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failN[path] = n
}

// requests returns the requests since the last call, each as "METHOD
// /path" (an S3 listing's with "?prefix=P"), sorted, and forgets them.
func (p *proxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.log
	p.log = nil
	slices.Sort(out)
	return out
}

// takePeak returns the most requests answered at once since the last
// call, and starts counting again.
func (p *proxy) takePeak() int64 { return p.peak.Swap(p.inflight.Load()) }

// takeStatuses returns the responses to requests for values since the
// last call (or reset), by "METHOD status", and forgets them.
func (p *proxy) takeStatuses() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.statuses
	p.statuses = map[string]int{}
	return c
}

// A statusRecorder remembers the status of a response.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

// writeBig writes a zarr-python store of n chunks of 1 MiB (512x512
// float32, zstd level 1, consolidated) into dir and returns the chunk keys
// in grid order.
func writeBig(t testing.TB, dir string, n int) []string {
	t.Helper()
	needPython(t)
	const script = `
import sys, numpy as np, numcodecs, zarr
out, n = sys.argv[1], int(sys.argv[2])
z = zarr.open(out, mode="w", shape=(n, 512, 512), chunks=(1, 512, 512), dtype="f4",
              compressor=numcodecs.Zstd(level=1), fill_value=0)
rng = np.random.default_rng(7)
for i in range(n):
    z[i] = np.round(rng.standard_normal((512, 512)) * 100).astype("f4")
zarr.consolidate_metadata(out)
`
	cmd := exec.Command(testutil.Python, "-c", script, dir, fmt.Sprint(n))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v\n%s", dir, err, out)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%d.0.0", i)
	}
	return keys
}

// readAll reads the files keys of dir in order and returns their bytes.
func readAll(t *testing.T, dir string, keys []string) [][]byte {
	t.Helper()
	out := make([][]byte, len(keys))
	for i, k := range keys {
		b, err := os.ReadFile(filepath.Join(dir, k))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// sameFiles fails unless the files keys of dirs a and b are identical.
func sameFiles(t *testing.T, a, b string, keys []string) {
	t.Helper()
	for _, k := range keys {
		x, errA := os.ReadFile(filepath.Join(a, k))
		y, errB := os.ReadFile(filepath.Join(b, k))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: %d bytes (%v) vs %d bytes (%v)", k, len(x), errA, len(y), errB)
		}
	}
}
