package zarr

import (
	"fmt"
	"strconv"
	"strings"
)

// A Span is one dimension of a selection, as ParseSlice parses it: the
// indices [lo, hi), negative ones counted from the end; hi is open (none)
// when !hasHi; index selects one element (lo).
type Span struct {
	lo, hi       int64
	hasLo, hasHi bool
	index        bool
}

// ParseSlice parses NAME[SEL]: SEL is a comma-separated list of
// dimensions, each an index ("5", "-1") or a range ("0:100", ":", "10:",
// ":-2"); dimensions not given are whole. Steps are not supported (every
// chunk a strided slice touches is read anyway when the step is smaller
// than the chunk).
func ParseSlice(expr string) (name string, sel []Span, err error) {
	expr = strings.TrimSpace(expr)
	open := strings.IndexByte(expr, '[')
	if open < 0 || !strings.HasSuffix(expr, "]") {
		return "", nil, fmt.Errorf("%q: want NAME[SEL], e.g. t2m[0:100]", expr)
	}
	name = strings.Trim(strings.TrimSpace(expr[:open]), "/")
	body := strings.TrimSpace(expr[open+1 : len(expr)-1])
	if body == "" {
		return name, nil, nil
	}
	for part := range strings.SplitSeq(body, ",") {
		part = strings.TrimSpace(part)
		var s Span
		lo, hi, isRange := strings.Cut(part, ":")
		if strings.Contains(hi, ":") {
			return "", nil, fmt.Errorf("%q: steps (a:b:c) are not supported", part)
		}
		s.index = !isRange
		if lo = strings.TrimSpace(lo); lo != "" || !isRange {
			if s.lo, err = strconv.ParseInt(lo, 10, 64); err != nil {
				return "", nil, fmt.Errorf("%q: not an index", part)
			}
			s.hasLo = true
		}
		if hi = strings.TrimSpace(hi); isRange && hi != "" {
			if s.hi, err = strconv.ParseInt(hi, 10, 64); err != nil {
				return "", nil, fmt.Errorf("%q: not an index", part)
			}
			s.hasHi = true
		}
		sel = append(sel, s)
	}
	return name, sel, nil
}

// ChunkRange returns the chunk coordinates [lo[i], hi[i]) that hold the
// selection sel of an array of shape in chunks of chunk. Indices are
// numpy's: negative from the end, ranges clipped to the shape, an index
// out of range an error.
func ChunkRange(shape, chunk []int, sel []Span) (lo, hi []int, err error) {
	if len(sel) > len(shape) {
		return nil, nil, fmt.Errorf("%d dimensions selected, the array has %d", len(sel), len(shape))
	}
	lo, hi = make([]int, len(shape)), make([]int, len(shape))
	for i, n := range shape {
		c := int64(chunk[i])
		a, b := int64(0), int64(n)
		if i < len(sel) {
			s := sel[i]
			norm := func(x int64) int64 {
				if x < 0 {
					x += int64(n)
				}
				return x
			}
			switch {
			case s.index:
				a = norm(s.lo)
				if a < 0 || a >= int64(n) {
					return nil, nil, fmt.Errorf("index %d is out of range for dimension %d of size %d", s.lo, i, n)
				}
				b = a + 1
			default:
				if s.hasLo {
					a = min(max(norm(s.lo), 0), int64(n))
				}
				if s.hasHi {
					b = min(max(norm(s.hi), 0), int64(n))
				}
			}
		}
		if b <= a {
			return lo, lo, nil // empty: no chunks
		}
		lo[i], hi[i] = int(a/c), int((b+c-1)/c)
	}
	return lo, hi, nil
}
