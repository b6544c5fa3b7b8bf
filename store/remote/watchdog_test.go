package remote_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/store/remote"
)

// drip is a response body that sends one byte per gap, n bytes in all,
// and fails when its request's context ends (as net/http's bodies do).
type drip struct {
	ctx context.Context
	gap time.Duration
	n   int
}

func (d *drip) Read(p []byte) (int, error) {
	if d.n == 0 {
		return 0, io.EOF
	}
	select {
	case <-time.After(d.gap):
		d.n--
		p[0] = 'x'
		return 1, nil
	case <-d.ctx.Done():
		return 0, d.ctx.Err()
	}
}

func (d *drip) Close() error { return nil }

// TestWatchdog: a server silent for the watchdog's time, before its
// headers or in its body, costs that time and an error whose Timeout() is
// true; a body that keeps coming, however slowly, is read to its end.
func TestWatchdog(t *testing.T) {
	const silence = 10 * time.Second
	for _, tc := range []struct {
		name    string
		headers time.Duration // before the response; -1: never
		gap     time.Duration // between body bytes
		n       int           // body bytes
		body    string        // what is read before the error
		timeout time.Duration // when the error comes; 0: no error
	}{
		{"never answers", -1, 0, 0, "", silence},
		{"answers late, but in time", 9 * time.Second, time.Second, 3, "xxx", 0},
		{"stops in the body", 0, time.Hour, 1, "", silence},
		{"slow body", 0, 9 * time.Second, 5, "xxxxx", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := remote.Watchdog{Silence: silence, Next: func(req *http.Request) (*http.Response, error) {
					if tc.headers < 0 {
						<-req.Context().Done()
						return nil, req.Context().Err()
					}
					time.Sleep(tc.headers) // the server thinking
					return &http.Response{StatusCode: 200, Body: &drip{ctx: req.Context(), gap: tc.gap, n: tc.n}}, nil
				}}
				req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://example.invalid/k", nil)
				start := time.Now()
				resp, err := w.RoundTrip(req)
				var b []byte
				if err == nil {
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				var te interface{ Timeout() bool }
				switch want := tc.timeout; {
				case want == 0 && (err != nil || string(b) != tc.body):
					t.Errorf("%q, %v; want %q", b, err, tc.body)
				case want != 0 && (!errors.As(err, &te) || !te.Timeout()):
					t.Errorf("%q, %v; want a timeout", b, err)
				case want != 0 && time.Since(start) != want:
					t.Errorf("gave up after %v, want %v", time.Since(start), want)
				}
			})
		})
	}
}

// slowReader gives one byte per gap, n bytes in all: an upload sent
// slowly (a slow link), which keeps the server busy receiving.
type slowReader struct {
	gap time.Duration
	n   int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.gap)
	r.n--
	p[0] = 'x'
	return 1, nil
}

// TestWatchdogUpload: an upload that takes longer than the watchdog's
// time, but keeps going, is not cut (a large part to S3 on a slow link);
// the server's silence counts from the last byte sent.
func TestWatchdogUpload(t *testing.T) {
	const silence = 10 * time.Second
	for _, tc := range []struct {
		name    string
		think   time.Duration // after the body, before the response
		timeout bool
	}{
		{"slow upload, quick answer", time.Second, false},
		{"slow upload, silent server", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := remote.Watchdog{Silence: silence, Next: func(req *http.Request) (*http.Response, error) {
					b, err := io.ReadAll(req.Body) // the transport sending it
					if err != nil || string(b) != "xxxxx" {
						return nil, errors.New("body not sent")
					}
					select {
					case <-time.After(tc.think):
						return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
					case <-req.Context().Done():
						return nil, req.Context().Err()
					}
				}}
				req, _ := http.NewRequestWithContext(t.Context(), "PUT", "http://example.invalid/k", &slowReader{gap: 9 * time.Second, n: 5})
				start := time.Now()
				resp, err := w.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				var te interface{ Timeout() bool }
				switch {
				case !tc.timeout && err != nil:
					t.Errorf("an upload of 45s that kept going: %v", err)
				case tc.timeout && (!errors.As(err, &te) || !te.Timeout()):
					t.Errorf("%v; want a timeout", err)
				case tc.timeout && time.Since(start) != 45*time.Second+silence:
					t.Errorf("gave up after %v, want 55s", time.Since(start))
				}
			})
		})
	}
}
