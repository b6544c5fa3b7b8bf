// Package remotetest is an HTTP server in memory for the tests of the
// remote stores (httpstore, s3store), and the bad answers it can give: it
// serves values with byte ranges, an ETag and S3's ListObjectsV2, and
// answers the requests for one key with a fault instead, as often as told.
// CheckHook checks what a store tells its store.Hook of its requests.
//
// It needs no sockets, so the tests run inside a testing/synctest bubble,
// where waits (backoff, Retry-After, a server that never answers) are
// exact and cost no time. Only tests import it.
package remotetest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/store"
)

// A Server is an http.RoundTripper that serves Values (key -> value) at
// URL paths "/" + Prefix + key (Prefix "bucket/" for S3's path-style URLs,
// where keys are object keys), and answers requests for Key with Fault
// while Faults is above zero. A nil Fault never answers (it returns when
// the request is cancelled). A query "list-type=2" is an S3 listing of
// the keys under its prefix. It is safe for concurrent use.
type Server struct {
	Values map[string][]byte
	Prefix string
	Key    string
	Fault  func(r *http.Request) *http.Response

	mu     sync.Mutex // guards the fields below
	faults int
	tries  int
}

// SetFaults says how many requests for Key get the fault from now on.
func (s *Server) SetFaults(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = n
}

// Tries returns how many requests for Key came.
func (s *Server) Tries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}

// RoundTrip answers r.
func (s *Server) RoundTrip(r *http.Request) (*http.Response, error) {
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"), s.Prefix)
	if r.URL.Query().Get("list-type") == "2" {
		return s.list(r), nil
	}
	s.mu.Lock()
	fault := key == s.Key && s.faults > 0
	if fault {
		s.faults--
	}
	if key == s.Key {
		s.tries++
	}
	s.mu.Unlock()
	switch {
	case fault && s.Fault != nil:
		return s.Fault(r), nil
	case fault:
		<-r.Context().Done() // a server that never answers
		return nil, r.Context().Err()
	}
	v, ok := s.Values[key]
	if !ok {
		return Answer(r, http.StatusNotFound, S3Error("NoSuchKey"), -1), nil
	}
	return Serve(r, v, `"v1"`), nil
}

// list answers an S3 ListObjectsV2 request: every key under the prefix,
// without delimiter handling beyond "/" (keys below a "/" become prefixes).
func (s *Server) list(r *http.Request) *http.Response {
	type object struct {
		Key  string
		Size int
		ETag string
	}
	type prefix struct{ Prefix string }
	var res struct {
		XMLName        xml.Name `xml:"ListBucketResult"`
		Name           string
		Prefix         string
		KeyCount       int
		IsTruncated    bool
		Contents       []object
		CommonPrefixes []prefix
	}
	res.Prefix = r.URL.Query().Get("prefix")
	seen := map[string]bool{}
	for k, v := range s.Values {
		rest, ok := strings.CutPrefix(k, res.Prefix)
		if !ok {
			continue
		}
		if dir, _, sub := strings.Cut(rest, "/"); sub {
			if p := res.Prefix + dir + "/"; !seen[p] {
				seen[p] = true
				res.CommonPrefixes = append(res.CommonPrefixes, prefix{p})
			}
			continue
		}
		res.Contents = append(res.Contents, object{Key: res.Prefix + rest, Size: len(v), ETag: `"v1"`})
	}
	res.KeyCount = len(res.Contents) + len(res.CommonPrefixes)
	b, _ := xml.Marshal(res)
	return Answer(r, http.StatusOK, b, int64(len(b)), "Content-Type", "application/xml")
}

// Serve answers r with value v and an ETag, as a server with byte ranges
// does (one range "bytes=FIRST-LAST" at most).
func Serve(r *http.Request, v []byte, etag string) *http.Response {
	body, code, h := v, http.StatusOK, []string{"ETag", etag}
	if rg := r.Header.Get("Range"); rg != "" {
		var first, last int
		fmt.Sscanf(rg, "bytes=%d-%d", &first, &last)
		if first >= len(v) {
			return Answer(r, http.StatusRequestedRangeNotSatisfiable, S3Error("InvalidRange"), -1,
				"Content-Range", fmt.Sprintf("bytes */%d", len(v)))
		}
		last = min(last, len(v)-1)
		body, code = v[first:last+1], http.StatusPartialContent
		h = append(h, "Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, len(v)))
	}
	if r.Method == http.MethodHead {
		resp := Answer(r, code, nil, int64(len(body)), h...)
		resp.Body = http.NoBody
		return resp
	}
	return Answer(r, code, body, int64(len(body)), h...)
}

// Answer makes a response to r: status code, body, Content-Length cl (-1:
// unknown; a body of another length is what a broken server sends), and
// header names and values in pairs.
func Answer(r *http.Request, code int, body []byte, cl int64, h ...string) *http.Response {
	resp := &http.Response{Request: r, StatusCode: code, Status: fmt.Sprint(code, " ", http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, ContentLength: cl, Body: io.NopCloser(bytes.NewReader(body))}
	for i := 0; i+1 < len(h); i += 2 {
		resp.Header.Set(h[i], h[i+1])
	}
	if cl >= 0 {
		resp.Header.Set("Content-Length", fmt.Sprint(cl))
	}
	return resp
}

// S3Error is the body of an S3 error response with code.
func S3Error(code string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + code + `</Message></Error>`)
}

// brokenBody returns its bytes, then a connection reset.
type brokenBody struct{ r io.Reader }

func (b brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("read: connection reset by peer")
	}
	return n, err
}

func (b brokenBody) Close() error { return nil }

// A Fault is one kind of bad answer to a request for N bytes at Off of
// the value (of at least Off+N+64 bytes) whose version the client has seen
// as Serve serves it, ETag "v1".
type Fault struct {
	Name    string
	Respond func(r *http.Request) *http.Response // nil: never answers
	Wait    time.Duration                        // the least a client must wait before trying again
}

// Faults returns the bad answers a server, or a proxy in between, may give
// to a range request for [off, off+n) of value.
func Faults(value []byte, off, n int) []Fault {
	cr := fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, len(value))
	shifted := append(bytes.Clone(value[off+16:off+n]), make([]byte, 16)...) // the range 16 bytes on
	other := bytes.Clone(value)
	for i := range other {
		other[i] ^= 0x5a
	}
	return []Fault{
		{"another range, said", func(r *http.Request) *http.Response {
			return Answer(r, 206, shifted, int64(n), "ETag", `"v1"`, "Content-Range", fmt.Sprintf("bytes %d-%d/%d", off+16, off+n+15, len(value)))
		}, 0},
		{"another range, unsaid", func(r *http.Request) *http.Response {
			return Answer(r, 206, shifted, int64(n), "ETag", `"v1"`)
		}, 0},
		{"body longer than asked", func(r *http.Request) *http.Response {
			return Answer(r, 206, value[off:off+n+37], int64(n+37), "ETag", `"v1"`, "Content-Range", cr)
		}, 0},
		{"body longer than asked, length unknown", func(r *http.Request) *http.Response {
			return Answer(r, 206, value[off:off+n+37], -1, "ETag", `"v1"`, "Content-Range", cr)
		}, 0},
		{"body shorter than its range", func(r *http.Request) *http.Response {
			return Answer(r, 206, value[off:off+n/2], int64(n/2), "ETag", `"v1"`, "Content-Range", cr)
		}, 0},
		{"short range where the value goes on", func(r *http.Request) *http.Response {
			return Answer(r, 206, value[off:off+n/2], int64(n/2), "ETag", `"v1"`,
				"Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n/2-1, len(value)))
		}, 0},
		{"cut short, the headers promising more", func(r *http.Request) *http.Response {
			resp := Answer(r, 206, nil, int64(n), "ETag", `"v1"`, "Content-Range", cr)
			resp.Body = brokenBody{bytes.NewReader(value[off : off+n/2])}
			return resp
		}, 0},
		{"another version (ETag)", func(r *http.Request) *http.Response { return Serve(r, other, `"v2"`) }, 0},
		{"another version (size)", func(r *http.Request) *http.Response { return Serve(r, value[:off+n+1], `"v1"`) }, 0},
		{"vanished (404)", func(r *http.Request) *http.Response {
			return Answer(r, http.StatusNotFound, S3Error("NoSuchKey"), -1)
		}, 0},
		{"416 where the value goes on", func(r *http.Request) *http.Response {
			return Answer(r, 416, S3Error("InvalidRange"), -1, "Content-Range", fmt.Sprintf("bytes */%d", len(value)))
		}, 0},
		{"416 without a size", func(r *http.Request) *http.Response {
			return Answer(r, 416, S3Error("InvalidRange"), -1)
		}, 0},
		{"503", func(r *http.Request) *http.Response { return Answer(r, 503, S3Error("ServiceUnavailable"), -1) }, 0},
		{"500", func(r *http.Request) *http.Response { return Answer(r, 500, S3Error("InternalError"), -1) }, 0},
		{"429 with Retry-After", func(r *http.Request) *http.Response {
			return Answer(r, 429, S3Error("TooManyRequests"), -1, "Retry-After", "3")
		}, 3 * time.Second},
		{"never answers", nil, 0},
	}
}

// Check runs fault f against a store that srv serves, through read (a
// ReadKeyRange of srv.Key), for the bytes [off, off+n) of value: first a
// read before any fault (the client sees the version), then f once (the
// next attempt must read the right bytes, no sooner than f.Wait) or, with
// always, on every request (the read must fail, and not with ErrNotExist,
// which reads as a fill value), then no fault (the read must succeed).
// Call it inside a synctest bubble.
func Check(t *testing.T, srv *Server, read func(ctx context.Context, off, n int64) ([]byte, error), value []byte, off, n int, f Fault, always bool) {
	t.Helper()
	ctx := t.Context()
	want := value[off : off+n]
	if b, err := read(ctx, 0, 10); err != nil || !bytes.Equal(b, value[:10]) {
		t.Fatalf("before the fault: %v", err)
	}
	srv.SetFaults(1)
	if always {
		srv.SetFaults(1 << 30)
	}
	start := time.Now()
	b, err := read(ctx, int64(off), int64(n))
	took := time.Since(start)
	switch {
	case always && (err == nil || errors.Is(err, fs.ErrNotExist)):
		t.Errorf("%d bytes (right: %v), %v; want an error, not ErrNotExist", len(b), bytes.Equal(b, want), err)
	case !always && (err != nil || !bytes.Equal(b, want)):
		t.Errorf("%d bytes (right: %v), %v; want the value's bytes", len(b), bytes.Equal(b, want), err)
	case !always && took < f.Wait:
		t.Errorf("read after %v, want at least %v", took, f.Wait)
	}
	srv.SetFaults(0)
	if b, err := read(ctx, int64(off), int64(n)); err != nil || !bytes.Equal(b, want) {
		t.Errorf("after the faults: %d bytes, %v", len(b), err)
	}
}

// Run runs open's store through every fault of Faults, given once and
// always, each in its own subtest and synctest bubble: open returns a read
// of srv.Key's range for a store served by srv; Check does the rest.
func Run(t *testing.T, open func(t *testing.T, srv *Server, value []byte) func(ctx context.Context, off, n int64) ([]byte, error)) {
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i * 7)
	}
	const off, n = 100, 200
	for _, f := range Faults(value, off, n) {
		for _, always := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/always=%v", f.Name, always), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := &Server{Fault: f.Respond}
					read := open(t, srv, value)
					Check(t, srv, read, value, off, n, f, always)
				})
			})
		}
	}
}

// A Hooked is the part of a remote store that CheckHook reads through.
type Hooked interface {
	ReadKey(ctx context.Context, key string) ([]byte, error)
	ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error)
	Stat(ctx context.Context, name string) (store.Entry, error)
}

// CheckHook checks what a remote store tells its hook (store.Hook): one
// report for each request, with its retries, and none for what the store
// answers from what it has seen (a size, a missing key). open returns the
// store, told of its requests by hook, of key holding value in srv (which
// it sets up: its Values, Key, Prefix); srv's Fault is a 503. It runs in a
// synctest bubble of its own.
func CheckHook(t *testing.T, key string, open func(t *testing.T, srv *Server, value []byte, hook store.Hook) Hooked) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		value := []byte("0123456789")
		var mu sync.Mutex
		var got []string
		hook := func(op, key string, n int64, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s %s %d missing=%v failed=%v", op, key, n, errors.Is(err, fs.ErrNotExist), err != nil))
		}
		srv := &Server{Fault: func(r *http.Request) *http.Response { return Answer(r, http.StatusServiceUnavailable, nil, 0) }}
		s := open(t, srv, value, hook)
		check := func(what string, want ...string) {
			t.Helper()
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("%s: the hook was told %q, want %q", what, got, want)
			}
			got = nil
		}
		mu.Lock()
		got = nil // what Open asked
		mu.Unlock()

		srv.SetFaults(1)
		tries := srv.Tries()
		if b, err := s.ReadKey(ctx, key); err != nil || !bytes.Equal(b, value) {
			t.Fatalf("ReadKey(%s) = %q, %v", key, b, err)
		}
		if n := srv.Tries() - tries; n != 2 {
			t.Errorf("ReadKey after a 503: %d requests, want 2", n)
		}
		check("a read after a 503", fmt.Sprintf("read %s 10 missing=false failed=false", key))
		if e, err := s.Stat(ctx, key); err != nil || e.Size != 10 {
			t.Errorf("Stat(%s) = %+v, %v", key, e, err)
		}
		check("a Stat of a key read before")
		if b, err := s.ReadKeyRange(ctx, key, 2, 5); err != nil || string(b) != "23456" {
			t.Errorf("ReadKeyRange(%s, 2, 5) = %q, %v", key, b, err)
		}
		check("a range read", fmt.Sprintf("read_range %s 5 missing=false failed=false", key))
		for range 2 {
			if _, err := s.ReadKey(ctx, "a/missing"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadKey(a/missing): %v, want ErrNotExist", err)
			}
		}
		check("two reads of a missing key", "read a/missing 0 missing=true failed=true")
	})
}
