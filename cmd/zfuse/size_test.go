package main

import (
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"4096", 4096},
		{"4096B", 4096},
		{"1KiB", 1024},
		{"1kib", 1024},
		{"1KB", 1000},
		{"512MiB", 512 << 20},
		{"512 MiB", 512 << 20},
		{" 1GiB ", 1 << 30},
		{"1G", 1 << 30},
		{"1GB", 1e9},
		{"2TiB", 2 << 40},
		{"3TB", 3e12},
		{"1.5GiB", 3 << 29},
		{"0.5KB", 500},
		{"1.3KiB", 1331}, // 1331.2 rounds down
		{".5MiB", 1 << 19},
		{"8388607TiB", 8388607 << 40},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, in := range []string{"", "GiB", "-1", "-1GiB", "1.2.3MiB", "1 GiBs", "1PiB", "1e9", "0x10", "8388608TiB", "1,5GiB", ".", "NaN", "+1"} {
		if n, err := ParseSize(in); !errors.Is(err, ErrSize) {
			t.Errorf("ParseSize(%q) = %d, %v; want ErrSize", in, n, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1000, "1000"},
		{1024, "1KiB"},
		{1025, "1025"},
		{1536, "1.5KiB"},
		{1 << 30, "1GiB"},
		{3 << 29, "1.5GiB"},
		{1e9, "976562.5KiB"},
		{5 << 40, "5TiB"},
		{1<<20 + 1<<17, "1.125MiB"},
	}
	for _, tt := range tests {
		if got := formatSize(tt.in); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatSizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var n int64
		switch i % 3 {
		case 0:
			n = r.Int64N(1 << 20)
		case 1:
			n = r.Int64N(1<<20) << (10 * r.IntN(4))
		default:
			n = r.Int64N(math.MaxInt64)
		}
		s := formatSize(n)
		if back, err := ParseSize(s); err != nil || back != n {
			t.Fatalf("ParseSize(formatSize(%d) = %q) = %d, %v", n, s, back, err)
		}
	}
}

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
