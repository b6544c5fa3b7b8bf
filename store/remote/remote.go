// Package remote holds what the HTTP and S3 stores share: a bound on
// requests in flight, retries with exponential backoff (and Retry-After), a
// watchdog on silent servers, the checks that a response answers its
// request (Content-Range, body length), and a table of what earlier
// responses said about each key (its size, that it is missing, its ETag),
// which answers Stat without another request and refuses values that change
// during a mount.
//
// The one fact to know: a store is assumed not to change while it is
// mounted. The table keeps the first version seen of each value for the
// life of the mount; a response from another version is an error, not
// followed. With a refresh interval (Facts.Refresh, zfuse --refresh) the
// version is kept for an interval after a response last confirmed it, and
// then the next response's version is the new one.
//
// remote imports only package store of zfuse.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"time"

	"github.com/zfuse/zfuse/store"
)

// A Limit bounds the requests in flight. It is safe for concurrent use.
type Limit chan struct{}

// NewLimit returns a Limit of n requests (at least 1).
func NewLimit(n int) Limit { return make(Limit, max(n, 1)) }

// Acquire waits for a free slot or for ctx to end.
func (l Limit) Acquire(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees the slot an Acquire took.
func (l Limit) Release() { <-l }

// ErrUnavailable means the server could not be reached, broke the
// connection, or did not answer in time.
var ErrUnavailable = errors.New("remote: server unavailable")

// Unavailable wraps a transport error in ErrUnavailable. It keeps the
// cause's message but not its type: a syscall.Errno inside (ECONNREFUSED)
// would otherwise reach readers as the errno of their read, and without
// the log line that an I/O error gets.
func Unavailable(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }

// errRetry marks an error that another attempt may cure (a 5xx, a refused
// or reset connection, a timeout), not before after.
type errRetry struct {
	err   error
	after time.Duration
}

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

// Retryable marks err as worth another attempt.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return errRetry{err: err}
}

// RetryableAfter marks err as worth another attempt after at least the
// wait a Retry-After header value h asks for (see ParseRetryAfter).
func RetryableAfter(err error, h string) error {
	if err == nil {
		return nil
	}
	return errRetry{err: err, after: ParseRetryAfter(h, time.Now())}
}

// IsRetryable reports whether err was marked with Retryable.
func IsRetryable(err error) bool {
	var r errRetry
	return errors.As(err, &r)
}

// Backoff says how often and how patiently to retry.
type Backoff struct {
	Attempts int           // tries in all; 0 means 5
	Base     time.Duration // wait before the second try; 0 means 100ms
	Max      time.Duration // longest wait between tries; 0 means 2s
	// OnRetry, if set, is called with the error before each retry (for a
	// retries counter). It must be safe for concurrent use.
	OnRetry func(err error)
}

// Retried calls b.OnRetry, if set: a request failed with err and is about
// to be tried again.
func (b Backoff) Retried(err error) {
	if b.OnRetry != nil {
		b.OnRetry(err)
	}
}

// WithDefaults returns b with its unset fields at their defaults: 5
// attempts, waits from 100 ms up to 2 s.
func (b Backoff) WithDefaults() Backoff {
	if b.Attempts <= 0 {
		b.Attempts = 5
	}
	if b.Base <= 0 {
		b.Base = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 2 * time.Second
	}
	return b
}

// Wait returns the wait before retry n (1 for the first): Base doubled
// for each retry before it, at most Max, half of it fixed and half
// random, which spreads the retries of many readers. b's unset fields are
// their defaults.
func (b Backoff) Wait(n int) time.Duration {
	b = b.WithDefaults()
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d/2+1)
}

// Do calls op until it succeeds, fails with an error not marked Retryable,
// ctx ends, or the attempts are used up, waiting Wait between tries, and
// at least what a RetryableAfter error asks for. The error of the last
// try is returned, saying how many tries were made when there was more
// than one.
func (b Backoff) Do(ctx context.Context, op func(ctx context.Context) error) error {
	attempts := b.WithDefaults().Attempts
	for try := 1; ; try++ {
		err := op(ctx)
		if err == nil || !IsRetryable(err) {
			return err
		}
		if try == attempts {
			return fmt.Errorf("%w (gave up after %d tries)", err, try)
		}
		if ctx.Err() != nil {
			return err
		}
		b.Retried(err)
		d := b.Wait(try)
		var r errRetry
		if errors.As(err, &r) {
			d = max(d, r.after)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// ReadBody reads a response body of n bytes (n < 0: length unknown), and
// refuses one longer than most bytes (most < 0: no limit) before reading
// it. A body that ends early is retryable and unavailable (the connection
// broke), unless ctx ended; one too long wraps ErrBadResponse, retryable.
func ReadBody(ctx context.Context, r io.Reader, n, most int64) ([]byte, error) {
	if most >= 0 && n > most {
		return nil, Retryable(fmt.Errorf("%w: a body of %d bytes, asked for %d", ErrBadResponse, n, most))
	}
	var b []byte
	var err error
	switch {
	case n >= 0:
		b = make([]byte, n)
		_, err = io.ReadFull(r, b)
	case most >= 0:
		b, err = io.ReadAll(io.LimitReader(r, most+1))
		if err == nil && int64(len(b)) > most {
			return nil, Retryable(fmt.Errorf("%w: a body of more than %d bytes, asked for %d", ErrBadResponse, most, most))
		}
	default:
		b, err = io.ReadAll(r)
	}
	switch {
	case err == nil:
		return b, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, Retryable(Unavailable(err))
}

// CheckKey refuses invalid keys and ended contexts before any request.
func CheckKey(ctx context.Context, op, key string) error {
	if !fs.ValidPath(key) {
		return &fs.PathError{Op: op, Path: key, Err: store.ErrOutside}
	}
	return ctx.Err()
}

// Join joins a directory key and a name; the root is ".".
func Join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
