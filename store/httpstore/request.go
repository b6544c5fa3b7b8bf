package httpstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/remote"
)

// errNotKey is returned for a key that names a directory on the server.
var errNotKey = fmt.Errorf("a directory, not a key: %w", fs.ErrNotExist)

// A statusError is an HTTP status we do not turn into data.
type statusError struct{ status string }

func (e statusError) Error() string { return e.status }

// url returns the URL of key: each path element escaped, under the base
// (whose query, if any, is kept: signed URLs carry tokens there).
func (s *Store) url(key string) string {
	u := *s.base
	if key != "." {
		var b strings.Builder
		b.WriteString(s.base.EscapedPath())
		for p := range strings.SplitSeq(key, "/") {
			b.WriteByte('/')
			b.WriteString(url.PathEscape(p))
		}
		u.RawPath = b.String()
		u.Path, _ = url.PathUnescape(u.RawPath)
	}
	return u.String()
}

// get reads key's value, or [off, off+n) of it when n >= 0, with retries.
// What the response says about key is recorded in s.facts. The caller owns
// the slice.
func (s *Store) get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, _, err := s.getVersion(ctx, key, off, n, "")
	return b, err
}

// getVersion is get, also returning the value's version (tag), and asking
// for the value only if its version is not have (when have is not ""): an
// unchanged value is store.ErrNotModified.
func (s *Store) getVersion(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	if x, ok := s.facts.Get(key); ok && x.Missing {
		return nil, "", &fs.PathError{Op: "http GET", Path: key, Err: fs.ErrNotExist}
	}
	end := s.facts.Begin(key)
	defer end()
	start := time.Now()
	var body []byte
	var version string
	err := s.backoff.Do(ctx, func(ctx context.Context) error {
		var err error
		body, version, err = s.getOnce(ctx, key, off, n, have)
		return err
	})
	if err != nil {
		body, err = nil, &fs.PathError{Op: "http GET", Path: key, Err: err}
	}
	s.hook.Done(store.ReadOp(n), key, start, len(body), err)
	return body, version, err
}

// getOnce is one attempt of getVersion. A response is used only when it
// answers the request (a 206's Content-Range is the range asked for, its
// body that long) and comes from the version of the value seen first
// (remote.Facts).
func (s *Store) getOnce(ctx context.Context, key string, off, n int64, have string) ([]byte, string, error) {
	resp, err := s.send(ctx, http.MethodGet, key, func(h http.Header) {
		if n >= 0 {
			h.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
		}
		setCondition(h, have)
	})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	version := tag(resp.Header)
	switch {
	case resp.StatusCode == http.StatusOK:
		if n >= 0 {
			s.noRange.Do(func() {
				s.log.WarnContext(ctx, "the server ignores Range requests: whole values are read for parts of them", "key", key)
			})
		}
		b, err := s.facts.Whole(ctx, key, resp.Body, resp.ContentLength, version, off, n)
		return b, version, err
	case resp.StatusCode == http.StatusPartialContent && n >= 0:
		b, err := s.facts.Partial(ctx, key, resp.Body, resp.ContentLength, resp.Header.Get("Content-Range"), version, off, n)
		return b, version, err
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && n >= 0:
		// The range starts at or past the end of the value, which the
		// header must say: an empty answer where the value goes on would
		// cut it short.
		size := remote.ContentRangeTotal(resp.Header.Get("Content-Range"))
		if size < 0 || off < size {
			return nil, "", remote.Retryable(fmt.Errorf("%w: 416 for bytes from %d, Content-Range %q", remote.ErrBadResponse, off, resp.Header.Get("Content-Range")))
		}
		if err := s.facts.Observe(ctx, key, remote.Fact{Size: size, Tag: version}); err != nil {
			return nil, "", err
		}
		return []byte{}, version, nil
	case resp.StatusCode == http.StatusNotModified && have != "":
		if version == "" {
			version = have // a 304 need not repeat the validators
		}
		if err := s.facts.Observe(ctx, key, remote.Fact{Size: -1, Tag: version}); err != nil {
			return nil, "", err
		}
		return nil, have, store.ErrNotModified
	}
	return nil, "", s.failed(ctx, key, resp)
}

// setCondition makes a request conditional on the value not being version
// have: If-None-Match for an ETag (quoted, or W/ and quoted), else
// If-Modified-Since for a Last-Modified date. "" sets nothing.
func setCondition(h http.Header, have string) {
	switch {
	case have == "":
	case remote.IsETag(have):
		h.Set("If-None-Match", have)
	default:
		h.Set("If-Modified-Since", have)
	}
}

// head describes key with a HEAD request (a one-byte GET where HEAD is not
// allowed), with retries.
func (s *Store) head(ctx context.Context, key string) (store.Entry, error) {
	start := time.Now()
	var e store.Entry
	err := s.backoff.Do(ctx, func(ctx context.Context) error {
		var err error
		e, err = s.headOnce(ctx, key)
		return err
	})
	if err != nil {
		err = &fs.PathError{Op: "http HEAD", Path: key, Err: err}
	}
	s.hook.Done("stat", key, start, 0, err)
	if err != nil {
		return store.Entry{}, err
	}
	return e, nil
}

func (s *Store) headOnce(ctx context.Context, key string) (store.Entry, error) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	resp, err := s.send(ctx, http.MethodHead, key, nil)
	if err != nil {
		return store.Entry{}, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			t := tag(resp.Header)
			if err := s.facts.Observe(ctx, key, remote.Fact{Size: resp.ContentLength, Tag: t}); err != nil {
				return store.Entry{}, err
			}
			return store.Entry{Name: name, Size: resp.ContentLength, Version: t}, nil
		}
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
	default:
		if isDirRedirect(resp) {
			return store.Entry{Name: name, Dir: true}, nil
		}
		return store.Entry{}, s.failed(ctx, key, resp)
	}
	// No size from HEAD: ask for the first byte, whose reply names the size.
	if _, _, err := s.getOnce(ctx, key, 0, 1, ""); err != nil {
		return store.Entry{}, err
	}
	if x, ok := s.facts.Get(key); ok && x.Size >= 0 {
		return store.Entry{Name: name, Size: x.Size, Version: x.Tag}, nil
	}
	b, _, err := s.getOnce(ctx, key, 0, -1, "")
	return store.Entry{Name: name, Size: int64(len(b))}, err
}

// send makes one request, holding a slot of the in-flight limit until the
// response headers arrive. The client's remote.Watchdog cancels a request
// whose server stays silent, before its headers or in its body. Errors that
// another attempt may cure are marked retryable.
func (s *Store) send(ctx context.Context, method, key string, set func(http.Header)) (*http.Response, error) {
	if err := s.limit.Acquire(ctx); err != nil {
		return nil, err
	}
	defer s.limit.Release()
	req, err := http.NewRequestWithContext(ctx, method, s.url(key), nil)
	if err != nil {
		return nil, err
	}
	if set != nil {
		set(req.Header)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log.DebugContext(ctx, "http request failed", "op", method, "key", key, "err", unwrapURL(err))
		return nil, remote.Retryable(remote.Unavailable(unwrapURL(err)))
	}
	s.log.DebugContext(ctx, "http", "op", method, "key", key, "status", resp.StatusCode, "took", time.Since(start))
	return resp, nil
}

// failed turns an unusable response into an error.
func (s *Store) failed(ctx context.Context, key string, resp *http.Response) error {
	err := statusError{resp.Status}
	switch c := resp.StatusCode; {
	case c == http.StatusNotFound || c == http.StatusGone:
		if err := s.facts.Observe(ctx, key, remote.Fact{Missing: true}); err != nil {
			return err // it was there: an error, not a missing chunk (a fill value)
		}
		return fmt.Errorf("%w: %w", err, fs.ErrNotExist)
	case isDirRedirect(resp):
		return errNotKey
	case c == http.StatusUnauthorized || c == http.StatusForbidden:
		return fmt.Errorf("%w: %w", err, fs.ErrPermission)
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return remote.RetryableAfter(err, resp.Header.Get("Retry-After"))
	}
	return err
}

// isDirRedirect reports whether resp redirects key to key + "/": the
// server's way to say key is a directory.
func isDirRedirect(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return false
	}
	loc, err := resp.Location()
	return err == nil && loc.Path == resp.Request.URL.Path+"/"
}

// tag returns the validator of a response: its ETag, else Last-Modified.
func tag(h http.Header) string {
	if t := h.Get("ETag"); t != "" {
		return t
	}
	return h.Get("Last-Modified")
}

// unwrapURL drops *url.Error's wrapping, which repeats the whole URL
// (query included, where signed URLs keep their tokens).
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
