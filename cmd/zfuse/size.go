package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ErrSize means a size string could not be parsed.
var ErrSize = errors.New("invalid size")

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

// ParseSize parses a byte size such as "1GiB", "512 MiB", "1.5GB" or
// "4096". Units are case-insensitive. A fractional number of bytes is
// rounded down. Negative sizes and sizes above MaxInt64 are errors.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("%w: %q", ErrSize, s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrSize, s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // both positive: rounds down
	if !n.IsInt64() {
		return 0, fmt.Errorf("%w: %q is larger than %d bytes", ErrSize, s, int64(math.MaxInt64))
	}
	return n.Int64(), nil
}

// binaryUnits lists the units formatSize uses, largest first.
var binaryUnits = []struct {
	name string
	n    int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// formatSize formats n bytes in the largest binary unit that shows it
// exactly with at most three decimals ("1GiB", "1.5MiB", "1000"), so that
// ParseSize(formatSize(n)) == n for every n >= 0: a flag's value as zfuse
// bench passes it on to its mounts. For people, cache.FormatSize.
func formatSize(n int64) string {
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

// A Size is a byte size usable as a flag.Value: flag.Var(&size, "cache",
// "decoded cache size (e.g. 1GiB)").
type Size int64

// String formats s with formatSize.
func (s Size) String() string { return formatSize(int64(s)) }

// Set parses v with ParseSize.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}
