package cache

import "testing"

func TestFormatSize(t *testing.T) {
	for _, r := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {812, "812 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{4 << 20, "4 MiB"}, {151412345, "144.4 MiB"}, {1 << 30, "1 GiB"}, {3 << 29, "1.5 GiB"},
		{1<<40 - 1, "1024.0 GiB"}, {5 << 40, "5 TiB"}, {-2048, "-2 KiB"},
	} {
		if got := FormatSize(r.n); got != r.want {
			t.Errorf("FormatSize(%d) = %q, want %q", r.n, got, r.want)
		}
	}
}
