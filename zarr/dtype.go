package zarr

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// itemSize returns the byte size of one element of a v2 dtype: a numpy
// typestr ("<f8", "|S5", "<U3", "<M8[ns]") or a structured descr (a JSON
// list of [name, dtype] or [name, dtype, shape], nested). object reports
// "|O", whose elements are Python objects and have no fixed raw size.
func itemSize(raw json.RawMessage) (size int, object bool, err error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return typestrSize(s)
	}
	var fields [][]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) == 0 {
		return 0, false, fmt.Errorf("%w: dtype %s is neither a typestr nor a structured descr", ErrInvalid, raw)
	}
	for _, f := range fields {
		if len(f) < 2 || len(f) > 3 {
			return 0, false, fmt.Errorf("%w: structured dtype field %s", ErrInvalid, raw)
		}
		n, obj, err := itemSize(f[1])
		if err != nil {
			return 0, false, err
		}
		object = object || obj
		if len(f) == 3 {
			var shape []int
			if err := json.Unmarshal(f[2], &shape); err != nil {
				return 0, false, fmt.Errorf("%w: structured dtype field shape %s", ErrInvalid, f[2])
			}
			for _, d := range shape {
				if d < 0 || d > 1<<20 {
					return 0, false, fmt.Errorf("%w: structured dtype field shape %s", ErrInvalid, f[2])
				}
				n *= d
			}
		}
		size += n
		if size > 1<<30 {
			return 0, false, fmt.Errorf("%w: dtype %s too large", ErrInvalid, raw)
		}
	}
	return size, object, nil
}

// typestrSize parses a numpy typestr: byte order, kind, size, and for
// datetimes a unit in brackets.
func typestrSize(s string) (size int, object bool, err error) {
	bad := func() (int, bool, error) { return 0, false, fmt.Errorf("%w: unknown dtype %q", ErrInvalid, s) }
	if len(s) < 2 || !strings.ContainsRune("<>|=", rune(s[0])) {
		return bad()
	}
	kind, rest := s[1], s[2:]
	if kind == 'M' || kind == 'm' {
		unit, ok := strings.CutPrefix(rest, "8")
		if !ok || (unit != "" && !validUnit(unit)) {
			return bad()
		}
		return 8, false, nil
	}
	if kind == 'O' {
		return 8, true, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n > 1<<30 || rest != strconv.Itoa(n) {
		return bad()
	}
	switch kind {
	case 'b':
		if n != 1 {
			return bad()
		}
	case 'i', 'u':
		if n != 1 && n != 2 && n != 4 && n != 8 {
			return bad()
		}
	case 'f':
		if n != 2 && n != 4 && n != 8 && n != 16 {
			return bad()
		}
	case 'c':
		if n != 8 && n != 16 && n != 32 {
			return bad()
		}
	case 'S', 'V':
	case 'U':
		n *= 4
	default:
		return bad()
	}
	return n, false, nil
}

// validUnit accepts numpy datetime units, optionally with a multiplier:
// "[ns]", "[10ms]", "[D]".
func validUnit(u string) bool {
	u, ok := strings.CutPrefix(u, "[")
	if !ok {
		return false
	}
	u, ok = strings.CutSuffix(u, "]")
	if !ok {
		return false
	}
	u = strings.TrimLeft(u, "0123456789")
	switch u {
	case "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic":
		return true
	}
	return false
}
