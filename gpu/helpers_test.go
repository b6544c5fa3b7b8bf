package gpu

import (
	"os"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// gpuDevice returns the opened GPU, or skips: CI has no GPU, so a missing
// device fails a test only where ZFUSE_TEST_REQUIRE lists gpu (as
// gpu/run_on_device.sh sets it on the GPU machine).
func gpuDevice(t testing.TB) *Decoder {
	t.Helper()
	g, err := openForTest()
	testutil.NeedGPU(t, err)
	return g
}

// openForTest opens the GPU once per test binary; it stays open (the
// process exit releases it).
var openForTest = sync.OnceValues(func() (*Decoder, error) {
	return Open(Config{})
})

// mkdirTemp makes a directory that outlives the test (for a shared
// library that stays loaded).
func mkdirTemp() (string, error) { return os.MkdirTemp("", "zfuse-gpu-") }
