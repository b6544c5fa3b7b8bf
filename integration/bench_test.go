package integration

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestBench runs zfuse bench on a small array (the race-built binary, which
// mounts with itself) and checks that it measured every row, verified the
// bytes it read through the mount, and judged every target.
func TestBench(t *testing.T) {
	needMount(t)
	needPython(t)
	stdout, stderr, err := run("bench", "--size", "16MiB", "--cache-decoded", "8MiB", "--readahead", "4MiB", "--workers", "2")
	if err != nil {
		t.Fatalf("zfuse bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("%s", stdout)
	if !bytes.Contains(stderr, []byte("verified: all 16 chunk files")) {
		t.Errorf("no verification of the bytes read through the mount:\n%s", stderr)
	}
	rate := `[0-9]+\.[0-9]{2} GB/s`
	for _, row := range []string{
		`\(a\) cold scan via mount, blosc-lz4 +` + rate + ` +` + rate + ` +[0-9]+ MiB`,
		`\(b\) cold scan via mount, uncompressed \(FUSE ceiling\) +` + rate + ` +` + rate,
		`\(c\) uncompressed files read directly +` + rate + ` +` + rate,
		`cold scan via mount, zstd +` + rate + ` +` + rate,
		`one-core decode in Go: blosc-lz4 / zstd +` + rate + ` +` + rate,
		`\(d\) zarr-python via mount, blosc-lz4 / zstd +` + rate + ` +` + rate,
		`\(d\) zarr-python decoding the store, blosc-lz4 / zstd +` + rate + ` +` + rate,
		`\(e\) strided scan \(axis 0\) via mount, 16 chunks +` + rate,
		`\(e\) random chunks via mount, 16 chunks +` + rate,
		`warm re-read via mount \(page cache\) +` + rate,
		`the same bytes from tmpfs \(/dev/shm\) +` + rate,
		`array: float32 4x1024x1024 = 16MiB decoded, 16 chunks of 1MiB \(1x512x512\)`,
		`budgets decoded 8MiB, compressed 0, readahead 4MiB`,
	} {
		if !regexp.MustCompile(row).Match(stdout) {
			t.Errorf("no line matching %q", row)
		}
	}
	if n := strings.Count(string(stdout), " met") + strings.Count(string(stdout), "NOT MET"); n != 7 {
		t.Errorf("%d targets judged, want 7", n)
	}
	if bytes.Contains(stdout, []byte("NaN")) || bytes.Contains(stdout, []byte("Inf")) {
		t.Errorf("a ratio of nothing:\n%s", stdout)
	}
}
