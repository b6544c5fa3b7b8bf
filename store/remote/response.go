package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrBadResponse means a response does not answer its request: another
// range than the one asked for, no Content-Range on a partial answer, a
// body longer than asked. Another attempt may get a good one, so errors
// wrapping it are marked Retryable.
var ErrBadResponse = errors.New("remote: response does not answer the request")

// A ContentRange is a parsed Content-Range header (RFC 9110 §14.4):
// "bytes First-Last/Total", or "bytes */Total" in a 416 answer.
type ContentRange struct {
	First, Last int64 // inclusive; both -1 in "bytes */Total"
	Total       int64 // length of the whole value; -1 for "*" (unknown)
}

// ParseContentRange parses a Content-Range header of unit "bytes". It
// refuses anything the RFC does not allow: signs, spaces inside numbers,
// Last < First, Last >= Total, "*/*".
func ParseContentRange(s string) (ContentRange, error) {
	bad := fmt.Errorf("%w: Content-Range %q", ErrBadResponse, s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return ContentRange{}, bad
	}
	rng, total, ok := strings.Cut(rest, "/")
	if !ok {
		return ContentRange{}, bad
	}
	cr := ContentRange{First: -1, Last: -1, Total: -1}
	var err error
	if total != "*" {
		if cr.Total, err = digits(total); err != nil {
			return ContentRange{}, bad
		}
	}
	if rng == "*" {
		if cr.Total < 0 {
			return ContentRange{}, bad
		}
		return cr, nil
	}
	first, last, ok := strings.Cut(rng, "-")
	if !ok {
		return ContentRange{}, bad
	}
	if cr.First, err = digits(first); err != nil {
		return ContentRange{}, bad
	}
	if cr.Last, err = digits(last); err != nil || cr.Last < cr.First || (cr.Total >= 0 && cr.Last >= cr.Total) {
		return ContentRange{}, bad
	}
	return cr, nil
}

// digits parses a non-empty run of decimal digits that fits an int64.
func digits(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(s, 10, 64)
}

// ContentRangeTotal returns the complete length from a Content-Range
// header ("bytes 0-99/1234" or "bytes */1234"), -1 if it does not say or
// does not parse.
func ContentRangeTotal(cr string) int64 {
	r, err := ParseContentRange(cr)
	if err != nil {
		return -1
	}
	return r.Total
}

// CheckPartial checks that a 206 answer with Content-Range header cr and a
// body of got bytes answers a request for the bytes [off, off+n): the range
// starts at off, the body is exactly the range, and the range is all of
// [off, off+n) or ends where the value does. It returns the value's length
// (-1 when the server does not know it). A range that does not answer the
// request would put other bytes at off: the error wraps ErrBadResponse and
// is marked Retryable.
func CheckPartial(cr string, off, n, got int64) (total int64, err error) {
	r, err := ParseContentRange(cr)
	if err == nil && r.First < 0 {
		err = fmt.Errorf("%w: a 206 with Content-Range %q", ErrBadResponse, cr)
	}
	if err != nil {
		return -1, Retryable(err)
	}
	want := n
	if r.Total >= 0 {
		want = max(0, min(n, r.Total-off))
	}
	switch {
	case r.First != off || r.Last-r.First+1 != want:
		err = fmt.Errorf("%w: asked for %d bytes at %d, Content-Range says %q", ErrBadResponse, n, off, cr)
	case got != want:
		err = fmt.Errorf("%w: Content-Range %q, but the body has %d bytes", ErrBadResponse, cr, got)
	}
	if err != nil {
		return -1, Retryable(err)
	}
	return r.Total, nil
}

// MaxRetryAfter bounds the wait a Retry-After header can ask for: a reader
// of the mount waits that long, in a read, for each attempt.
const MaxRetryAfter = 30 * time.Second

// ParseRetryAfter returns the wait a Retry-After header value asks for,
// seconds or an HTTP date (RFC 9110 §10.2.3), at most MaxRetryAfter; 0 when
// h is empty, in the past, or does not parse.
func ParseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if s, err := digits(h); err == nil {
		d = time.Duration(min(s, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, MaxRetryAfter))
}

// Whole reads the body of an answer that holds all of key's value (cl
// bytes, -1: unknown) from the version with validator tag, checks it
// against what was known of key (Observe), and returns its bytes in [off,
// off+n), or all of them when n < 0.
func (f *Facts) Whole(ctx context.Context, key string, body io.Reader, cl int64, tag string, off, n int64) ([]byte, error) {
	b, err := ReadBody(ctx, body, cl, -1)
	if err != nil {
		return nil, err
	}
	if err := f.Observe(ctx, key, Fact{Size: int64(len(b)), Tag: tag}); err != nil {
		return nil, err
	}
	if n >= 0 {
		b = b[min(off, int64(len(b))):min(off+n, int64(len(b)))]
	}
	return b, nil
}

// Partial reads the body of a 206 answer (cl bytes, -1: unknown; Content-Range
// cr; validator tag) to a request for [off, off+n) of key's value, and
// returns it if it answers the request (CheckPartial) and comes from the
// version known (Observe).
func (f *Facts) Partial(ctx context.Context, key string, body io.Reader, cl int64, cr, tag string, off, n int64) ([]byte, error) {
	b, err := ReadBody(ctx, body, cl, n)
	if err != nil {
		return nil, err
	}
	size, err := CheckPartial(cr, off, n, int64(len(b)))
	if err != nil {
		return nil, err
	}
	if err := f.Observe(ctx, key, Fact{Size: size, Tag: tag}); err != nil {
		return nil, err
	}
	return b, nil
}
