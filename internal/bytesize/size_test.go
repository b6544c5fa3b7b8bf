package bytesize

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestParse(t *testing.T) {
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
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "GiB", "-1", "-1GiB", "1.2.3MiB", "1 GiBs", "1PiB", "1e9", "0x10", "8388608TiB", "1,5GiB", ".", "NaN", "+1"} {
		if n, err := Parse(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %d, %v; want ErrInvalid", in, n, err)
		}
	}
}

func TestExact(t *testing.T) {
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
		if got := Exact(tt.in); got != tt.want {
			t.Errorf("Exact(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExactRoundTrip(t *testing.T) {
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
		s := Exact(n)
		if back, err := Parse(s); err != nil || back != n {
			t.Fatalf("Parse(Exact(%d) = %q) = %d, %v", n, s, back, err)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, r := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {812, "812 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{4 << 20, "4 MiB"}, {151412345, "144.4 MiB"}, {1 << 30, "1 GiB"}, {3 << 29, "1.5 GiB"},
		{1<<40 - 1, "1024.0 GiB"}, {5 << 40, "5 TiB"}, {-2048, "-2 KiB"},
	} {
		if got := Format(r.n); got != r.want {
			t.Errorf("Format(%d) = %q, want %q", r.n, got, r.want)
		}
	}
}
