package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gpuNeed skips a test that lacks something the project provides in CI
// (conformance data, Python with numcodecs, gcc) on a laptop, and fails it
// when the environment variable CI is set.
func gpuNeed(t testing.TB, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s required in CI", what)
	}
	t.Skipf("no %s", what)
}

// gpuDevice returns the opened GPU, or skips: CI has no GPU, so a missing
// device fails a test only when ZFUSE_TEST_REQUIRE contains "gpu" (set by
// gpu/run_on_device.sh on the GPU machine).
func gpuDevice(t testing.TB) *Decoder {
	t.Helper()
	g, err := openForTest()
	if err == nil {
		return g
	}
	if strings.Contains(os.Getenv("ZFUSE_TEST_REQUIRE"), "gpu") {
		t.Fatalf("gpu required (ZFUSE_TEST_REQUIRE): %v", err)
	}
	t.Skipf("no gpu: %v", err)
	return nil
}

// openForTest opens the GPU once per test binary; it stays open (the
// process exit releases it).
var openForTest = sync.OnceValues(func() (*Decoder, error) {
	return Open(Config{})
})

// gpuShared finds the shared directory: $ZFUSE_SHARED, else ../shared
// beside the repository root (the directory holding go.mod).
var gpuShared = sync.OnceValue(func() string {
	if d := os.Getenv("ZFUSE_SHARED"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared")
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
})

// gpuConformance returns a folder of the conformance data, or skips (fails in CI).
func gpuConformance(t testing.TB, sub string) string {
	t.Helper()
	d := filepath.Join(gpuShared(), "conformance", sub)
	_, err := os.Stat(d)
	gpuNeed(t, "conformance data "+d, gpuShared() != "" && err == nil)
	return d
}

// mkdirTemp makes a directory that outlives the test (for a shared
// library that stays loaded).
func mkdirTemp() (string, error) { return os.MkdirTemp("", "zfuse-gpu-") }
