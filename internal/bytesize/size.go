// Package bytesize formats byte sizes for people (Format: logs, zfuse info,
// the bench and compress reports) and parses and formats them for flags
// (Parse and Exact, which round-trip exactly).
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ErrInvalid means a size string could not be parsed.
var ErrInvalid = errors.New("invalid size")

// sizeUnits maps a unit suffix (lower case) to its number of bytes. Binary
// units (KiB) are powers of 1024, decimal ones (KB) powers of 1000. The
// bare letters K, M, G, T are binary, as in Linux and Docker memory limits.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// Parse parses a byte size such as "1GiB", "512 MiB", "1.5GB" or
// "4096". Units are case-insensitive. A fractional number of bytes is
// rounded down. Negative sizes and sizes above MaxInt64 are errors.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // both positive: rounds down
	if !n.IsInt64() {
		return 0, fmt.Errorf("%w: %q is larger than %d bytes", ErrInvalid, s, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}

// binaryUnits lists the units Exact uses, largest first.
var binaryUnits = []struct {
	name string
	n    int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Exact formats n bytes in the largest binary unit that shows it
// exactly with at most three decimals ("1GiB", "1.5MiB", "1000"), so that
// Parse(Exact(n)) == n for every n >= 0: a flag's value as zfuse
// bench passes it on to its mounts. For people, Format.
func Exact(n int64) string {
	if n < 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range binaryUnits {
		if n < u.n {
			continue
		}
		if n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
		// n/u has a finite decimal expansion (u is a power of two);
		// use it when it is short.
		r := new(big.Rat).SetFrac64(n, u.n)
		s := r.FloatString(3)
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
			return strings.TrimRight(s, "0") + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// Format formats n bytes for people, in the largest binary unit not
// above it: "812 B", "4 MiB" (exactly), "1.2 GiB" (rounded to a tenth).
// It is the one byte formatter of zfuse's output (logs, zfuse info, the
// bench and compress reports); flags keep their own exact form.
func Format(n int64) string {
	if n < 1<<10 && n > -1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u, div := 0, int64(1<<10)
	for u < len(units)-1 && (n >= div<<10 || n <= -div<<10) {
		u, div = u+1, div<<10
	}
	if n%div == 0 {
		return fmt.Sprintf("%d %s", n/div, units[u])
	}
	return fmt.Sprintf("%.1f %s", float64(n)/float64(div), units[u])
}
