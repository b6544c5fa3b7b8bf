package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A Watchdog sends requests with Next and cancels those whose server stays
// silent for Silence: no response headers that long after the request's
// body was last read from (an upload is being sent, not waited on), or no
// byte of the response body that long between two reads. A server that
// accepts a connection and never answers, or stops in the middle of a
// body, so costs an attempt Silence, not the reader's patience; a slow
// body that keeps coming, in either direction, is not cut. The error of a cancelled request (from Next, or from reading the
// body) has Timeout() true, which the AWS SDK retries; httpstore marks it
// Retryable. It is an http.RoundTripper and an AWS SDK HTTPClient, and safe
// for concurrent use when Next is.
type Watchdog struct {
	Next    func(*http.Request) (*http.Response, error)
	Silence time.Duration
}

// silentError is the cause of a request the watchdog cancelled.
type silentError struct{ d time.Duration }

func (e *silentError) Error() string   { return fmt.Sprintf("the server sent nothing for %v", e.d) }
func (e *silentError) Timeout() bool   { return true }
func (e *silentError) Temporary() bool { return true }

// RoundTrip sends req, watching it.
func (w Watchdog) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	silent := &silentError{w.Silence}
	timer := time.AfterFunc(w.Silence, func() { cancel(silent) })
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &sentBody{ReadCloser: req.Body, timer: timer, d: w.Silence}
	}
	resp, err := w.Next(req)
	if err != nil {
		timer.Stop()
		cancel(nil)
		if context.Cause(ctx) == silent {
			return nil, silent
		}
		return nil, err
	}
	timer.Reset(w.Silence)
	resp.Body = &watchedBody{ReadCloser: resp.Body, ctx: ctx, cancel: cancel, timer: timer, silent: silent}
	return resp, nil
}

// Do is RoundTrip, for the AWS SDK's HTTPClient interface.
func (w Watchdog) Do(req *http.Request) (*http.Response, error) { return w.RoundTrip(req) }

// A sentBody is a request body that restarts its request's watchdog timer
// on every read: while the transport sends it, the server is not silent.
type sentBody struct {
	io.ReadCloser
	timer *time.Timer
	d     time.Duration
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	return n, err
}

// A watchedBody restarts its request's watchdog timer on every read that
// returns data, and stops it on Close.
type watchedBody struct {
	io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	silent *silentError
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.silent.d)
	}
	if err != nil && err != io.EOF && context.Cause(b.ctx) == b.silent {
		err = b.silent
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
