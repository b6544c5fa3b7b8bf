package remote_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/store/remote"
)

var errBoom = errors.New("boom")

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fails    int   // tries that fail before one succeeds
		err      error // what they fail with
		attempts int
		wantTry  int
		wantErr  bool
	}{
		{"success", 0, nil, 3, 1, false},
		{"retried then ok", 2, remote.Retryable(errBoom), 3, 3, false},
		{"gave up", 5, remote.Retryable(errBoom), 3, 3, true},
		{"not retryable", 5, errBoom, 3, 1, true},
	} {
		// OnRetry sees every try but the first, and not the one given up on.
		wantRetries := tc.wantTry - 1
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tries, retries := 0, 0
				start := time.Now()
				b := remote.Backoff{Attempts: tc.attempts, Base: 100 * time.Millisecond, Max: 150 * time.Millisecond,
					OnRetry: func(err error) {
						if !errors.Is(err, errBoom) {
							t.Errorf("OnRetry(%v)", err)
						}
						retries++
					}}
				err := b.Do(t.Context(), func(context.Context) error {
					if tries++; tries <= tc.fails {
						return tc.err
					}
					return nil
				})
				if tries != tc.wantTry || (err != nil) != tc.wantErr {
					t.Fatalf("%d tries, %v", tries, err)
				}
				if retries != wantRetries {
					t.Errorf("OnRetry called %d times, want %d", retries, wantRetries)
				}
				if err != nil && !errors.Is(err, errBoom) {
					t.Errorf("%v does not wrap the failure", err)
				}
				// Waits: [50,100]ms, then [75,150]ms (capped).
				if d := time.Since(start); tries == 3 && (d < 125*time.Millisecond || d > 250*time.Millisecond) {
					t.Errorf("waited %v over 3 tries", d)
				}
			})
		})
	}
}

func TestBackoffCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		tries := 0
		err := remote.Backoff{Attempts: 100, Base: time.Hour}.Do(ctx, func(context.Context) error {
			tries++
			return remote.Retryable(errBoom)
		})
		if tries != 1 || !errors.Is(err, errBoom) {
			t.Errorf("%d tries, %v", tries, err)
		}
	})
}

// TestFacts: the first version of a value seen is pinned; a response
// from another version (ETag, size, vanished) is refused with ErrChanged,
// retryably, and leaves the pinned fact alone, so that the first version
// reads again once the server serves it again.
func TestFacts(t *testing.T) {
	var logs bytes.Buffer
	f := remote.NewFacts(4, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		x       remote.Fact
		changed bool
	}{
		{"first", remote.Fact{Size: 10, Tag: `"1"`}, false},
		{"a range: no size, same tag", remote.Fact{Size: -1, Tag: `"1"`}, false},
		{"weak, unquoted: the same tag", remote.Fact{Size: 10, Tag: `W/1`}, false},
		{"no tag", remote.Fact{Size: 10}, false},
		{"another tag", remote.Fact{Size: 10, Tag: `"2"`}, true},
		{"another size", remote.Fact{Size: 11, Tag: `"1"`}, true},
		{"vanished", remote.Fact{Missing: true}, true},
		{"the first version again", remote.Fact{Size: -1, Tag: `"1"`}, false},
	} {
		err := f.Observe(ctx, "a", tc.x)
		if got := errors.Is(err, remote.ErrChanged); got != tc.changed || (err != nil && !remote.IsRetryable(err)) {
			t.Errorf("%s: Observe(%+v) = %v, want changed %v, retryable", tc.name, tc.x, err, tc.changed)
		}
		if x, ok := f.Get("a"); !ok || x.Size != 10 || x.Tag != `"1"` {
			t.Errorf("%s: Get(a) = %+v, %v; want the first version", tc.name, x, ok)
		}
	}
	// Forgotten (the caller rewrote it): the next version is the one.
	f.Forget("a")
	if err := f.Observe(ctx, "a", remote.Fact{Size: 12, Tag: `"3"`}); err != nil {
		t.Errorf("after Forget: %v", err)
	}
	if err := f.Observe(ctx, "b", remote.Fact{Missing: true}); err != nil {
		t.Error(err)
	}
	if err := f.Observe(ctx, "b", remote.Fact{Missing: true}); err != nil {
		t.Errorf("missing twice: %v", err)
	}
	if err := f.Observe(ctx, "b", remote.Fact{Size: 3}); err != nil {
		t.Errorf("appeared: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "key=b") {
		t.Errorf("no warning for a key that appeared: %s", logs.String())
	}
	for _, k := range []string{"c", "d", "e", "f", "g"} {
		f.Observe(ctx, k, remote.Fact{Missing: true})
	}
	n := 0
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		if _, ok := f.Get(k); ok {
			n++
		}
	}
	if n > 4 {
		t.Errorf("%d keys kept, limit 4", n)
	}
}

// TestFactsRefresh: with a refresh interval, a version is pinned for an
// interval after a response last said it; then the fact is stale (Get
// reports nothing, so the caller asks again), and a response from another
// version is the new version.
func TestFactsRefresh(t *testing.T) {
	v1, v2 := remote.Fact{Size: 10, Tag: `"1"`}, remote.Fact{Size: 12, Tag: `"2"`}
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		wait    time.Duration // after observing v1
		changed bool          // observing v2 then is refused
		known   bool          // Get reports a fact before v2 is observed
		want    remote.Fact   // what Get says after
	}{
		{"no refresh: pinned for ever", 0, time.Hour, true, true, v1},
		{"within the interval: pinned", time.Second, time.Second / 2, true, true, v1},
		{"after the interval: the new version", time.Second, time.Second, false, false, v2},
		{"long after: the new version", time.Second, time.Minute, false, false, v2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := remote.NewFacts(0, nil)
				f.Refresh(tc.refresh)
				if err := f.Observe(t.Context(), "k", v1); err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.wait) // synctest: a fake clock
				if _, ok := f.Get("k"); ok != tc.known {
					t.Errorf("Get before: known %v, want %v", ok, tc.known)
				}
				err := f.Observe(t.Context(), "k", v2)
				if got := errors.Is(err, remote.ErrChanged); got != tc.changed {
					t.Errorf("Observe(v2) = %v, want changed %v", err, tc.changed)
				}
				if x, ok := f.Get("k"); !ok || x.Size != tc.want.Size || x.Tag != tc.want.Tag {
					t.Errorf("Get after = %+v, %v; want %+v", x, ok, tc.want)
				}
			})
		})
	}
	// A key seen missing is asked about again after the interval, and
	// appears without a warning.
	synctest.Test(t, func(t *testing.T) {
		f := remote.NewFacts(0, nil)
		f.Refresh(time.Second)
		f.Observe(t.Context(), "m", remote.Fact{Missing: true})
		time.Sleep(time.Second)
		if _, ok := f.Get("m"); ok {
			t.Error("a stale missing fact is still reported")
		}
		if err := f.Observe(t.Context(), "m", v1); err != nil {
			t.Error(err)
		}
	})
}

func TestFactsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := remote.NewFacts(0, nil)
		end := f.Begin("k")
		got := make(chan remote.Fact)
		go func() { x, _ := f.Wait(t.Context(), "k"); got <- x }()
		synctest.Wait() // Wait blocks on the fetch in flight
		f.Observe(t.Context(), "k", remote.Fact{Size: 7})
		end()
		if x := <-got; x.Size != 7 {
			t.Errorf("Wait = %+v", x)
		}
	})
}

func TestContentRangeTotal(t *testing.T) {
	for cr, want := range map[string]int64{"bytes 0-99/1234": 1234, "bytes */1234": 1234, "bytes 0-99/*": -1, "": -1, "bytes 0-99/50": -1} {
		if got := remote.ContentRangeTotal(cr); got != want {
			t.Errorf("ContentRangeTotal(%q) = %d, want %d", cr, got, want)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want remote.ContentRange
		ok   bool
	}{
		{"bytes 0-99/1234", remote.ContentRange{First: 0, Last: 99, Total: 1234}, true},
		{"bytes 5-5/6", remote.ContentRange{First: 5, Last: 5, Total: 6}, true},
		{"bytes 0-99/*", remote.ContentRange{First: 0, Last: 99, Total: -1}, true},
		{"bytes */1234", remote.ContentRange{First: -1, Last: -1, Total: 1234}, true},
		{"bytes */0", remote.ContentRange{First: -1, Last: -1, Total: 0}, true},
		{"bytes */*", remote.ContentRange{}, false},
		{"bytes 0-99/99", remote.ContentRange{}, false}, // last past the end
		{"bytes 9-5/20", remote.ContentRange{}, false},
		{"bytes -1-5/20", remote.ContentRange{}, false},
		{"bytes +1-5/20", remote.ContentRange{}, false},
		{"bytes 1 -5/20", remote.ContentRange{}, false},
		{"bytes 0-5", remote.ContentRange{}, false},
		{"items 0-5/20", remote.ContentRange{}, false},
		{"bytes=0-5/20", remote.ContentRange{}, false},
		{"bytes 0-99999999999999999999/*", remote.ContentRange{}, false},
		{"", remote.ContentRange{}, false},
	} {
		got, err := remote.ParseContentRange(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseContentRange(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, remote.ErrBadResponse) {
			t.Errorf("ParseContentRange(%q): %v does not wrap ErrBadResponse", tc.in, err)
		}
	}
}

// TestCheckPartial: a 206 answers a request for [off, off+n) only with
// that range, or the part of it before the value ends, and a body of its
// length.
func TestCheckPartial(t *testing.T) {
	for _, tc := range []struct {
		cr          string
		off, n, got int64
		total       int64 // -2: refused
	}{
		{"bytes 0-99/1000", 0, 100, 100, 1000},
		{"bytes 900-999/1000", 900, 100, 100, 1000},
		{"bytes 950-999/1000", 950, 100, 50, 1000}, // the value ends
		{"bytes 0-99/*", 0, 100, 100, -1},
		{"bytes 0-49/*", 0, 100, 50, -2},          // short, and no size to say why
		{"bytes 16-115/1000", 0, 100, 100, -2},    // another range
		{"bytes 0-49/1000", 0, 100, 50, -2},       // short where the value goes on
		{"bytes 0-99/1000", 0, 100, 60, -2},       // the body is not the range
		{"bytes 0-199/1000", 0, 100, 200, -2},     // longer than asked
		{"", 0, 100, 100, -2},                     // no Content-Range
		{"bytes */1000", 0, 100, 0, -2},           // a 416's header on a 206
		{"bytes 1000-1099/2000", 0, 100, 100, -2}, // shifted
	} {
		total, err := remote.CheckPartial(tc.cr, tc.off, tc.n, tc.got)
		switch {
		case tc.total == -2 && (err == nil || !errors.Is(err, remote.ErrBadResponse) || !remote.IsRetryable(err)):
			t.Errorf("CheckPartial(%q, %d, %d, %d) = %d, %v; want a retryable ErrBadResponse", tc.cr, tc.off, tc.n, tc.got, total, err)
		case tc.total != -2 && (err != nil || total != tc.total):
			t.Errorf("CheckPartial(%q, %d, %d, %d) = %d, %v; want %d", tc.cr, tc.off, tc.n, tc.got, total, err, tc.total)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		" 2 ":                           2 * time.Second,
		"0":                             0,
		"-5":                            0,
		"1e3":                           0,
		"100000":                        remote.MaxRetryAfter,
		"Tue, 01 Dec 2026 10:00:07 GMT": 7 * time.Second,
		"Tue, 01 Dec 2026 09:00:00 GMT": 0,
		"Wed, 02 Dec 2026 10:00:00 GMT": remote.MaxRetryAfter,
		"soon":                          0,
	} {
		if got := remote.ParseRetryAfter(h, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
}

// TestBackoffRetryAfter: a retry waits at least what Retry-After asks for,
// even where the backoff alone would wait less.
func TestBackoffRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tries := 0
		start := time.Now()
		err := remote.Backoff{Attempts: 3, Base: time.Millisecond}.Do(t.Context(), func(context.Context) error {
			if tries++; tries == 1 {
				return remote.RetryableAfter(errBoom, "2")
			}
			return nil
		})
		if err != nil || tries != 2 {
			t.Fatalf("%d tries, %v", tries, err)
		}
		if d := time.Since(start); d < 2*time.Second || d > 2*time.Second+10*time.Millisecond {
			t.Errorf("waited %v, want 2s", d)
		}
	})
}

func TestReadBody(t *testing.T) {
	body := []byte("0123456789")
	for _, tc := range []struct {
		name    string
		n, most int64
		want    string
		bad     bool // ErrBadResponse
		broken  bool // ErrUnavailable
	}{
		{"known length", 10, -1, "0123456789", false, false},
		{"known length within most", 10, 10, "0123456789", false, false},
		{"known length over most", 10, 9, "", true, false},
		{"unknown length", -1, -1, "0123456789", false, false},
		{"unknown length within most", -1, 10, "0123456789", false, false},
		{"unknown length over most", -1, 9, "", true, false},
		{"shorter than its header", 12, -1, "", false, true},
	} {
		got, err := remote.ReadBody(t.Context(), bytes.NewReader(body), tc.n, tc.most)
		switch {
		case tc.bad || tc.broken:
			want := remote.ErrBadResponse
			if tc.broken {
				want = remote.ErrUnavailable
			}
			if !errors.Is(err, want) || !remote.IsRetryable(err) {
				t.Errorf("%s: %q, %v; want a retryable %v", tc.name, got, err, want)
			}
		case err != nil || string(got) != tc.want:
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// FuzzContentRange: a Content-Range header parses only into a range that
// makes sense, and CheckPartial accepts only an answer that is exactly
// the part of [off, off+n) the value has.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/1234", "bytes */1234", "bytes 0-99/*", "bytes 5-5/6", "bytes 1-0/5", "bytes 0-5", "bytes=0-5/9", ""} {
		f.Add(s, int64(0), int64(100), int64(100))
	}
	f.Fuzz(func(t *testing.T, s string, off, n, got int64) {
		r, err := remote.ParseContentRange(s)
		if err == nil {
			switch {
			case r.First < 0 && (r.Last != -1 || r.First != -1 || r.Total < 0):
				t.Fatalf("%q: %+v", s, r)
			case r.First >= 0 && (r.Last < r.First || (r.Total >= 0 && r.Last >= r.Total)):
				t.Fatalf("%q: %+v", s, r)
			}
			if remote.ContentRangeTotal(s) != r.Total {
				t.Fatalf("%q: ContentRangeTotal %d, parsed %+v", s, remote.ContentRangeTotal(s), r)
			}
		}
		if off < 0 || n <= 0 || got < 0 {
			return
		}
		total, err := remote.CheckPartial(s, off, n, got)
		if err != nil {
			return
		}
		switch {
		case r.First != off || r.Last-r.First+1 != got || got > n:
			t.Fatalf("accepted %q (%+v) with %d bytes for %d at %d", s, r, got, n, off)
		case got < n && (total < 0 || off+got != total):
			t.Fatalf("accepted %q: %d of %d bytes at %d, but the value does not end there (total %d)", s, got, n, off, total)
		}
	})
}

// TestBackoffWait: the wait before retry n doubles from Base up to Max,
// half of it random; unset fields are the defaults (100 ms, 2 s).
func TestBackoffWait(t *testing.T) {
	b := remote.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	for n, full := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 50, 9: 50} {
		full *= time.Millisecond
		for range 20 {
			if d := b.Wait(n); d < full/2 || d > full {
				t.Errorf("Wait(%d) = %v, want within [%v, %v]", n, d, full/2, full)
			}
		}
	}
	if d := (remote.Backoff{}).Wait(1); d < 50*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("default Wait(1) = %v", d)
	}
	if got := (remote.Backoff{}).WithDefaults(); got.Attempts != 5 || got.Base != 100*time.Millisecond || got.Max != 2*time.Second {
		t.Errorf("WithDefaults = %+v", got)
	}
}
