package integration

// A fault-injecting HTTP proxy for the reliability tests: it stands between
// zfuse and a real server (nginx, versitygw) and, per request and by a
// seeded schedule, answers with one kind of fault instead of (or on top of)
// the server's answer. It never changes a request, so S3 signatures hold.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The kinds of fault, as the issue lists them.
const (
	faultLatency     = "latency"      // 5-25 ms before every answer (jitter)
	faultResetBefore = "reset-before" // the connection reset before any answer
	faultResetBody   = "reset-body"   // reset in the middle of the body
	faultShortBody   = "short-body"   // the body ends early, the headers promising more
	faultLongBody    = "long-body"    // a ranged answer with more bytes than asked
	faultWrongRange  = "wrong-range"  // a ranged answer for another range, saying so
	faultNoRange     = "no-range"     // the same without Content-Range
	fault5xx         = "5xx-burst"    // 500 and 503, several requests in a row
	fault429         = "429"          // 429 with Retry-After: 1
	faultHang        = "hang"         // accepts the request and never answers
	faultETag        = "etag"         // a value served before comes back changed, with a new ETag
	// faultMix is one of mixKinds for each request faulted: what an
	// object store under load answers when many nodes mount at once.
	faultMix = "mix"
)

var mixKinds = []string{faultResetBefore, faultShortBody, fault5xx, fault429, faultHang}

var allFaults = []string{faultLatency, faultResetBefore, faultResetBody, faultShortBody, faultLongBody,
	faultWrongRange, faultNoRange, fault5xx, fault429, faultHang, faultETag}

// A faultProxy forwards to target and injects the fault set with inject.
type faultProxy struct {
	URL    string
	target string // host:port of the server
	tr     *http.Transport
	closed chan struct{} // closed when the test ends: hung requests return

	mu      sync.Mutex // guards the fields below
	kind    string     // the fault injected; "" for none
	rate    float64    // of requests that get it
	rng     *rand.Rand
	burst   int                  // requests left in a 5xx burst
	served  map[string]time.Time // paths answered whole at least once, and when first (etag changes only those)
	faulted map[string]bool      // requests whose last answer was a fault (so the next is a retry)
	stats   faultStats
}

// faultStats are the proxy's counts since the last inject.
type faultStats struct {
	Requests int            // requests seen
	Faults   int            // answers faulted
	Retries  int            // requests repeating one whose answer was a fault
	ByKind   map[string]int // faults by kind
}

func startFaultProxy(t testing.TB, target string, seed uint64) *faultProxy {
	t.Helper()
	p := &faultProxy{target: strings.TrimPrefix(target, "http://"), closed: make(chan struct{}),
		rng: rand.New(rand.NewPCG(seed, 15)), served: map[string]time.Time{}, faulted: map[string]bool{}}
	p.tr = &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true, Proxy: nil}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() {
		close(p.closed)
		srv.Close()
		p.tr.CloseIdleConnections()
	})
	p.URL = "http://" + l.Addr().String()
	return p
}

// inject makes rate of the requests from now on get kind ("" for none),
// and resets the counts. inject("") before a new mount also forgets what
// was served: a value changes only after the mount has seen it.
func (p *faultProxy) inject(kind string, rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kind, p.rate, p.burst = kind, rate, 0
	if kind == "" {
		p.served = map[string]time.Time{}
	}
	p.faulted = map[string]bool{}
	p.stats = faultStats{ByKind: map[string]int{}}
}

// counts returns the counts since the last inject.
func (p *faultProxy) counts() faultStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByKind = map[string]int{}
	for k, v := range p.stats.ByKind {
		s.ByKind[k] = v
	}
	return s
}

// decide draws whether the request id gets the fault, by the seeded
// schedule, and counts it.
func (p *faultProxy) decide(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	if p.faulted[id] {
		p.stats.Retries++
		delete(p.faulted, id)
	}
	draw := p.rng.Float64()
	switch {
	case p.kind == "":
		return ""
	case p.kind == faultLatency:
		return faultLatency
	case p.kind == fault5xx && p.burst > 0:
		p.burst--
		return fault5xx
	case draw >= p.rate:
		return ""
	case p.kind == faultMix:
		return mixKinds[p.rng.IntN(len(mixKinds))]
	case p.kind == fault5xx:
		p.burst = 1 + p.rng.IntN(4) // this one and up to four more
	}
	return p.kind
}

// count counts a fault of kind that is no failure (latency).
func (p *faultProxy) count(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Faults++
	p.stats.ByKind[kind]++
}

// faultedAnswer records that id got a fault of kind.
func (p *faultProxy) faultedAnswer(id, kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Faults++
	p.stats.ByKind[kind]++
	p.faulted[id] = true
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Range")
	kind := p.decide(id)
	if os.Getenv("ZFUSE_FAULT_TRACE") != "" {
		defer func() { fmt.Fprintf(os.Stderr, "TRACE %s %s faulted=%v\n", id, kind, p.faultedNow(id)) }()
	}
	switch kind {
	case faultHang:
		p.faultedAnswer(id, kind)
		select { // until zfuse gives up on it, or the test ends
		case <-r.Context().Done():
		case <-p.closed:
		}
		return
	case faultResetBefore:
		p.faultedAnswer(id, kind)
		reset(w, nil)
		return
	case fault5xx:
		p.faultedAnswer(id, kind)
		code := []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[p.draw(2)]
		http.Error(w, http.StatusText(code), code)
		return
	case fault429:
		p.faultedAnswer(id, kind)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	resp, body, err := p.forward(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	ok := resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent
	ranged := resp.StatusCode == http.StatusPartialContent && r.Method == http.MethodGet && len(body) > 1
	h := resp.Header.Clone()
	h.Del("Connection")
	switch {
	case kind == faultLatency:
		p.count(kind)
		time.Sleep(time.Duration(5+p.draw(21)) * time.Millisecond) // the emulated network
	case (kind == faultResetBody || kind == faultShortBody) && ok && r.Method == http.MethodGet && len(body) > 1:
		p.faultedAnswer(id, kind)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		raw(w, resp.StatusCode, h, body[:len(body)/2], kind == faultResetBody)
		return
	case kind == faultLongBody && ranged:
		p.faultedAnswer(id, kind)
		body = append(body, bytes.Repeat([]byte{0xa5}, 1+p.draw(100))...)
	case (kind == faultWrongRange || kind == faultNoRange) && ranged:
		// The answer for the range k bytes on (or back), as a server that
		// got the offsets wrong would give it; the k bytes it does not have
		// are zeros.
		first, last, total, ok := parseRange(h.Get("Content-Range"))
		k := int64(1 + p.draw(min(16, len(body)-1)))
		switch {
		case !ok: // no range to shift
		case last+k < total:
			body = append(body[k:], make([]byte, k)...)
		case first >= k:
			body = append(make([]byte, k), body[:int64(len(body))-k]...)
			k = -k
		default:
			ok = false
		}
		if !ok {
			break
		}
		p.faultedAnswer(id, kind)
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first+k, last+k, total))
		if kind == faultNoRange {
			h.Del("Content-Range")
		}
	case kind == faultETag && ok && p.servedBefore(r.URL.Path) && (h.Get("ETag") != "" || h.Get("Last-Modified") != ""):
		// (A change without a validator to show it is beyond any client.)
		// Another version of the value: new bytes, a new validator.
		p.faultedAnswer(id, kind)
		body = bytes.Clone(body)
		for i := range body {
			body[i] ^= 0x5a
		}
		if e := h.Get("ETag"); e != "" {
			h.Set("ETag", `"changed-`+strings.Trim(e, `"`)+`"`)
		}
		if lm := h.Get("Last-Modified"); lm != "" {
			h.Set("Last-Modified", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		}
	}
	if ok && (r.Method == http.MethodHead || len(body) > 0) {
		p.mu.Lock()
		if _, ok := p.served[r.URL.Path]; !ok {
			p.served[r.URL.Path] = time.Now()
		}
		p.mu.Unlock()
	}
	if r.Method != http.MethodHead {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

func (p *faultProxy) faultedNow(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faulted[id]
}

// draw returns a number in [0, n) from the schedule.
func (p *faultProxy) draw(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.IntN(n)
}

// servedBefore reports whether path was first answered a while ago. A
// value changed for a request racing the first one (two in flight for the
// same key) could reach the mount first, and be the first version it sees,
// and so the one it rightly serves: the test would count its bytes wrong.
func (p *faultProxy) servedBefore(path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.served[path]
	return ok && time.Since(at) > servedSettle
}

// servedSettle is how long after a path's first answer its value may change:
// longer than any first answer takes to reach the mount.
const servedSettle = 50 * time.Millisecond

// forward sends r to the server unchanged (the S3 signature covers its
// headers and Host) and reads the whole answer.
func (p *faultProxy) forward(r *http.Request) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.target+r.URL.RequestURI(), nil)
	if err != nil {
		return nil, nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// raw writes a response by hand on the connection under w: the status,
// the headers h and body (which may be shorter than h's Content-Length),
// then closes the connection, with a reset if rst.
func raw(w http.ResponseWriter, code int, h http.Header, body []byte, rst bool) {
	conn, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			fmt.Fprintf(bw, "%s: %s\r\n", k, v)
		}
	}
	bw.WriteString("\r\n")
	bw.Write(body)
	bw.Flush()
	if rst {
		reset(nil, conn)
		return
	}
	conn.Close()
}

// reset closes the connection under w (or conn) with a TCP reset.
func reset(w http.ResponseWriter, conn net.Conn) {
	if conn == nil {
		var err error
		var bw *bufio.ReadWriter
		if conn, bw, err = http.NewResponseController(w).Hijack(); err != nil {
			return
		}
		bw.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// parseRange parses "bytes FIRST-LAST/TOTAL".
func parseRange(cr string) (first, last, total int64, ok bool) {
	_, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &first, &last, &total)
	return first, last, total, err == nil
}
