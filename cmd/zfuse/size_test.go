package main

import (
	"flag"
	"io"
	"testing"
)

func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := Size(1 << 30)
	fs.Var(&s, "cache", "cache size")
	if got := fs.Lookup("cache").DefValue; got != "1GiB" {
		t.Errorf("default shows as %q", got)
	}
	if err := fs.Parse([]string{"-cache", "256MiB"}); err != nil || s != 256<<20 {
		t.Errorf("parsed %d, %v", s, err)
	}
	if err := fs.Parse([]string{"-cache", "lots"}); err == nil {
		t.Error("bad size accepted")
	}
}
