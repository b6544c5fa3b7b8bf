package main

import "github.com/zfuse/zfuse/internal/bytesize"

// A Size is a byte size usable as a flag.Value: flag.Var(&size, "cache",
// "decoded cache size (e.g. 1GiB)").
type Size int64

// String formats s with bytesize.Exact.
func (s Size) String() string { return bytesize.Exact(int64(s)) }

// Set parses v with bytesize.Parse.
func (s *Size) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}
