package integration

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestBench runs a small zfuse bench (the race-built binary, which mounts
// with itself): one round of every reader on a 16 MiB Blosc array in 1 MiB
// chunks, on the no-open and passthrough paths, and checks that it measured
// every cell of the matrix, read the right bytes through the mount, and
// judged every target.
func TestBench(t *testing.T) {
	needMount(t)
	needPython(t)
	servings := "no-open"
	if os.Geteuid() == 0 {
		servings += ",passthrough"
	}
	stdout, stderr, err := run("bench", "--size", "16MiB", "--runs", "1", "--epochs", "2", "--codecs", "blosc", "--chunks", "1MiB",
		"--servings", servings, "--cache-decoded", "8MiB", "--readahead", "4MiB", "--workers", "2")
	if err != nil {
		t.Fatalf("zfuse bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("%s", stdout)
	rate := `[0-9]+\.[0-9]{2} \[[0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2}\]`
	epochs := rate + ` +` + rate
	rows := []string{
		`arrays 1MiB: float32 4x1024x1024, 16 chunks of 1 MiB \(1x512x512\)`,
		`budgets decoded 8MiB, compressed 0, readahead 4MiB`,
	}
	for _, reader := range []string{"files-grid", "files-list", "zarr", "loader"} {
		rows = append(rows, `1MiB +`+reader+` +none +raw +`+epochs)
		if reader == "zarr" || reader == "loader" {
			rows = append(rows, `1MiB +`+reader+` +blosc +self +`+epochs)
		}
		for _, s := range strings.Split(servings, ",") {
			rows = append(rows, `1MiB +`+reader+` +blosc +mount\(`+s+`\) +`+epochs+` +`+s+`, [0-9.]+ [KMG]?i?B, [0-9.]+ s`)
		}
	}
	for _, row := range rows {
		if !regexp.MustCompile(row).Match(stdout) {
			t.Errorf("no line matching %q", row)
		}
	}
	// Per serving path: zarr-python at epochs 1 and 2, the DataLoader at 1
	// (epoch 3 was not read), the file tool cold, warm, and in listing
	// order; and the memory of the mounts.
	want := 6*len(strings.Split(servings, ",")) + 1
	if n := strings.Count(string(stdout), " met") + strings.Count(string(stdout), "NOT MET"); n != want {
		t.Errorf("%d targets judged, want %d", n, want)
	}
	if bytes.Contains(stdout, []byte("NaN")) || bytes.Contains(stdout, []byte("Inf")) {
		t.Errorf("a ratio of nothing:\n%s", stdout)
	}
}
