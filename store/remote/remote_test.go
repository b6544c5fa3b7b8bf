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

func TestFacts(t *testing.T) {
	var logs bytes.Buffer
	f := remote.NewFacts(4, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := t.Context()
	f.Observe(ctx, "a", remote.Fact{Size: 10, Tag: `"1"`})
	f.Observe(ctx, "a", remote.Fact{Size: -1, Tag: `"1"`}) // a range: no size, same tag
	if x, ok := f.Get("a"); !ok || x.Size != 10 {
		t.Errorf("Get(a) = %+v, %v", x, ok)
	}
	if logs.Len() != 0 {
		t.Errorf("warned without a change: %s", logs.String())
	}
	f.Observe(ctx, "a", remote.Fact{Size: 10, Tag: `"2"`})
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "key=a") {
		t.Errorf("no warning for a new ETag: %s", logs.String())
	}
	for _, k := range []string{"b", "c", "d", "e", "f"} {
		f.Observe(ctx, k, remote.Fact{Missing: true})
	}
	n := 0
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if _, ok := f.Get(k); ok {
			n++
		}
	}
	if n > 4 {
		t.Errorf("%d keys kept, limit 4", n)
	}
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
	for cr, want := range map[string]int64{"bytes 0-99/1234": 1234, "bytes */1234": 1234, "bytes 0-99/*": -1, "": -1} {
		if got := remote.ContentRangeTotal(cr); got != want {
			t.Errorf("ContentRangeTotal(%q) = %d, want %d", cr, got, want)
		}
	}
}
