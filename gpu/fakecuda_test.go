package gpu

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// fakeCUDA builds testdata/fakecuda.cc (a libcuda stand-in that runs the
// real kernel sources on host threads, see its comment) once per test
// binary, or skips (fails in CI) without g++.
func fakeCUDA(t testing.TB) string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	testutil.Need(t, "g++", err == nil)
	lib, out, err := buildFake(gxx)
	if err != nil {
		t.Fatalf("building fakecuda: %v\n%s", err, out)
	}
	return lib
}

var (
	fakeOnce sync.Once
	fakeLib  string
	fakeOut  []byte
	fakeErr  error
	fakeDir  string
)

func buildFake(gxx string) (string, []byte, error) {
	fakeOnce.Do(func() {
		// Not t.TempDir: the library stays loaded for the life of the process.
		dir, err := mkdirTemp()
		if err != nil {
			fakeErr = err
			return
		}
		fakeDir = dir
		fakeLib = filepath.Join(dir, "libcuda.so.1")
		cmd := exec.Command(gxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-w",
			"-I", "kernels", "-o", fakeLib, filepath.Join("testdata", "fakecuda.cc"))
		fakeOut, fakeErr = cmd.CombinedOutput()
	})
	return fakeLib, fakeOut, fakeErr
}

// TestFakeDriver runs the CUDA engine (cuda.go, engine_cuda.go) against the
// fake driver: every bound call through purego, the kernel arguments, the
// device offsets, and the real .cu kernels executed warp-synchronously on
// host threads. Results must equal codec.Batch byte for byte.
func TestFakeDriver(t *testing.T) {
	lib := fakeCUDA(t)
	g, err := Open(Config{Library: lib, SliceBytes: 256 << 10, Streams: 2})
	if err != nil {
		t.Fatalf("Open(fakecuda): %v", err)
	}
	defer g.Close()
	if d := g.Device(); d.Name != "fakecuda (host threads)" || d.Major != 9 || d.SMs != 2 || d.Driver != 13000 {
		t.Errorf("Device() = %+v", d)
	}
	r := rand.New(rand.NewPCG(41, 42))
	var blosc []chunk
	for _, c := range goChunks(t, r, true) {
		if r.IntN(2) == 0 { // half keeps the test quick
			blosc = append(blosc, c)
		}
	}
	blosc = append(blosc, fixtureChunks(t, "blosc")...)
	blosc = append(blosc, corrupt(r, blosc, 60)...)
	if n := agree(t, mustBatch(t, g, codec.Blosc{}), codec.Blosc{}, blosc); n < len(blosc)-60 {
		t.Errorf("blosc: %d of %d decoded", n, len(blosc))
	}
	lz4 := fixtureChunks(t, "lz4")
	for _, n := range []int{13, 5000, 70000} {
		lz4 = append(lz4, chunk{name: "lz4", src: encodeLZ4(t, mixedData(r, n)), room: n})
	}
	lz4 = append(lz4, corrupt(r, lz4, 20)...)
	if n := agree(t, mustBatch(t, g, codec.LZ4{}), codec.LZ4{}, lz4); n < len(lz4)-20 {
		t.Errorf("lz4: %d of %d decoded", n, len(lz4))
	}
	st := g.Stats()
	if st.GPUJobs < int64(len(blosc)+len(lz4))/2 || st.Slices < 2 || st.Kernel <= 0 {
		t.Errorf("stats %+v: want most chunks through the driver, in several slices, with event times", st)
	}
	if err := g.failed(); err != nil {
		t.Errorf("device failure: %v", err)
	}
}
