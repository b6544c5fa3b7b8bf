package gpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// stubSymbols are the driver entry points bindAll binds; the stub library
// exports them all so that Open gets as far as the stub lets it.
var stubSymbols = []string{
	"cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetName", "cuDeviceGetAttribute",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuMemAlloc_v2",
	"cuMemFree_v2", "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemcpyHtoDAsync_v2",
	"cuMemcpyDtoHAsync_v2", "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
	"cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime",
	"cuEventDestroy_v2", "cuLaunchKernel",
}

// stubLibrary builds a fake libcuda.so with gcc: cuInit returns initResult
// and cuDeviceGetCount reports no device; everything else fails with 999.
func stubLibrary(t *testing.T, initResult string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	testutil.Need(t, "gcc", err == nil)
	var c strings.Builder
	c.WriteString(`typedef int CUresult;
CUresult cuInit(unsigned flags) { return ` + initResult + `; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_STUB"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = r == 100 ? "no CUDA-capable device is detected" : "stub"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 0; return 0; }
`)
	for _, s := range stubSymbols {
		c.WriteString("CUresult " + s + "(void) { return 999; }\n")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "stub.c")
	lib := filepath.Join(dir, "libcuda.so.1")
	if err := os.WriteFile(src, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return lib
}

// TestOpenUnavailable: every way the GPU can be missing gives an error
// wrapping ErrUnavailable with the reason, never a panic or an exit.
func TestOpenUnavailable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	for _, c := range []struct {
		name, lib string
		reason    string   // in Reason(err)
		code      cuResult // the driver's CUresult, 0 if none
		absent    bool     // no GPU at all, rather than one that fails
	}{
		{"no library", missing, "cannot load " + missing, 0, true},
		{"cuInit finds no device", stubLibrary(t, "100"), "cuInit: CUDA_ERROR_NO_DEVICE (100)", cudaErrorNoDevice, true},
		{"cuInit fails", stubLibrary(t, "3"), "cuInit: CUDA_ERROR_STUB (3)", 3, false},
		{"no device", stubLibrary(t, "0"), "no CUDA device", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := Open(Config{Library: c.lib})
			if g != nil || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Open = %v, %v; want ErrUnavailable", g, err)
			}
			if !strings.Contains(Reason(err), c.reason) {
				t.Errorf("Reason = %q, want it to contain %q", Reason(err), c.reason)
			}
			if code, ok := cudaCode(err); (c.code != 0) != ok || code != c.code {
				t.Errorf("cudaCode = %d, %v; want %d", code, ok, c.code)
			}
			if Absent(err) != c.absent {
				t.Errorf("Absent(%v) = %v, want %v", err, Absent(err), c.absent)
			}
		})
	}
}

// TestOpenSystemDriver opens the machine's libcuda.so.1: a GPU machine
// opens it; elsewhere (no library, or a driver without a device, as on CI
// with Debian's libcuda1 installed) Open must fail cleanly.
func TestOpenSystemDriver(t *testing.T) {
	g, err := Open(Config{})
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Open: %v does not wrap ErrUnavailable", err)
		}
		t.Logf("no GPU here: %s", Reason(err))
		return
	}
	defer g.Close()
	t.Logf("GPU: %s", g.Device())
}

// TestRouterWithoutGPU: with no GPU, auto mode decodes every batch on the
// CPU pool, byte for byte as codec.Batch does, and says why; gpu mode
// refuses to start.
func TestRouterWithoutGPU(t *testing.T) {
	cfg := Config{Library: filepath.Join(t.TempDir(), "nothing.so")}
	if _, err := NewRouter(GPU, cfg, nil, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewRouter(gpu) = %v, want ErrUnavailable", err)
	}
	pool := codec.NewPool(2)
	defer pool.Close()
	r, err := NewRouter(Auto, cfg, pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.GPU() != nil {
		t.Fatal("router has a GPU")
	}
	if why := r.Why(codec.Blosc{}, nil); why != "cpu: no GPU" || !strings.HasPrefix(Reason(r.NoGPU()), "cannot load ") {
		t.Errorf("Why = %q, NoGPU = %v", why, r.NoGPU())
	}
	chunks := cbloscChunks(t)
	if n := agree(t, r.Batch(codec.Blosc{}, nil), codec.Blosc{}, chunks); n != len(chunks) {
		t.Errorf("%d of %d decoded", n, len(chunks))
	}
	lz4 := fixtureChunks(t, "lz4")
	if n := agree(t, r.Batch(codec.LZ4{}, nil), codec.LZ4{}, lz4); n != len(lz4) {
		t.Errorf("lz4: %d of %d decoded", n, len(lz4))
	}
	// The stub "no device" driver behaves the same.
	r2, err := NewRouter(Auto, Config{Library: stubLibrary(t, "100")}, pool, 0)
	if err != nil || r2.GPU() != nil {
		t.Fatalf("NewRouter with the stub: %v, %v", r2, err)
	}
	if why := r2.Why(codec.LZ4{}, nil); why != "cpu: no GPU" || !strings.Contains(Reason(r2.NoGPU()), "CUDA_ERROR_NO_DEVICE") {
		t.Errorf("Why = %q, NoGPU = %v", why, r2.NoGPU())
	}
	jobs := jobsFor(lz4)
	if err := r2.Batch(codec.LZ4{}, nil).DecodeBatch(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		if j.Err != nil {
			t.Errorf("%s: %v", lz4[i].name, j.Err)
		}
	}
}
