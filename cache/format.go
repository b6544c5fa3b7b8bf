package cache

import "fmt"

// FormatSize formats n bytes for people, in the largest binary unit not
// above it: "812 B", "4 MiB" (exactly), "1.2 GiB" (rounded to a tenth).
// It is the one byte formatter of zfuse's output (logs, zfuse info, the
// bench and compress reports); flags keep their own exact form.
func FormatSize(n int64) string {
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
