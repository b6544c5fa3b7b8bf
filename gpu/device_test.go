package gpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// Tests that need a real GPU. They skip without one (CI has none) and fail
// where ZFUSE_TEST_REQUIRE lists gpu, as gpu/run_on_device.sh sets it.

// TestDeviceAgrees: the GPU decodes the conformance data, Go-encoded
// chunks of every shape and corrupted chunks exactly as codec.Batch does.
func TestDeviceAgrees(t *testing.T) {
	g := gpuDevice(t)
	t.Logf("device: %s", g.Device())
	r := rand.New(rand.NewPCG(51, 52))
	blosc := append(cbloscChunks(t), fixtureChunks(t, "blosc")...)
	blosc = append(blosc, goChunks(t, r, false)...)
	lz4 := fixtureChunks(t, "lz4")
	for _, n := range []int{1, 13, 100, 4096, 65536, 1 << 20, 4 << 20} {
		lz4 = append(lz4,
			chunk{name: fmt.Sprintf("lz4 mixed %d", n), src: encodeLZ4(t, mixedData(r, n)), room: n},
			chunk{name: fmt.Sprintf("lz4 float %d", n), src: encodeLZ4(t, floatData(r, n)), room: n})
	}
	for _, c := range []struct {
		name   string
		d      codec.Decoder
		chunks []chunk
		bad    int
	}{
		{"blosc", codec.Blosc{}, blosc, 0},
		{"lz4", codec.LZ4{}, lz4, 0},
		{"blosc corrupt", codec.Blosc{}, append(corrupt(r, blosc, 3000), blosc[:50]...), 3000},
		{"lz4 corrupt", codec.LZ4{}, append(corrupt(r, lz4, 1000), lz4...), 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := g.Stats()
			n := agree(t, mustBatch(t, g, c.d), c.d, c.chunks)
			if n < len(c.chunks)-c.bad {
				t.Errorf("%d of %d decoded", n, len(c.chunks))
			}
			after := g.Stats()
			if after.GPUJobs-before.GPUJobs < int64(len(c.chunks))/4 {
				t.Errorf("only %d of %d chunks on the GPU", after.GPUJobs-before.GPUJobs, len(c.chunks))
			}
			if err := g.failed(); err != nil {
				t.Fatalf("device failed: %v", err)
			}
		})
	}
}

// TestDeviceNumcodecs decodes chunks numcodecs wrote on the build machine
// (`make gpu` puts them in bin/gpu-fixtures; run_on_device.sh passes the
// folder in ZFUSE_GPU_FIXTURES).
func TestDeviceNumcodecs(t *testing.T) {
	g := gpuDevice(t)
	dir := os.Getenv("ZFUSE_GPU_FIXTURES")
	testutil.Need(t, "ZFUSE_GPU_FIXTURES (numcodecs chunks from make gpu)", dir != "")
	blosc, lz4 := pyChunks(t, dir)
	if len(blosc) < 100 || len(lz4) < 5 {
		t.Fatalf("%s holds %d blosc and %d lz4 chunks", dir, len(blosc), len(lz4))
	}
	if n := agree(t, mustBatch(t, g, codec.Blosc{}), codec.Blosc{}, blosc); n != len(blosc) {
		t.Errorf("blosc: %d of %d decoded", n, len(blosc))
	}
	if n := agree(t, mustBatch(t, g, codec.LZ4{}), codec.LZ4{}, lz4); n != len(lz4) {
		t.Errorf("lz4: %d of %d decoded", n, len(lz4))
	}
}

// TestDeviceLargeBatch decodes one 256 MiB batch of 1 MiB chunks (several
// slices on several streams) and compares it with the CPU pool.
func TestDeviceLargeBatch(t *testing.T) {
	g := gpuDevice(t)
	for _, kind := range []string{"blosc-shuffle", "blosc-bitshuffle", "lz4"} {
		t.Run(kind, func(t *testing.T) {
			ds := dataset(t, kind, 1<<20, 256<<20)
			got, want := ds.jobs(), ds.jobs()
			bd := mustBatch(t, g, ds.d)
			if err := bd.DecodeBatch(t.Context(), got); err != nil {
				t.Fatal(err)
			}
			pool := codec.NewPool(0)
			defer pool.Close()
			if err := pool.Batch(ds.d).DecodeBatch(t.Context(), want); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Err != nil || want[i].Err != nil || string(got[i].Dst) != string(want[i].Dst) {
					t.Fatalf("chunk %d: gpu err %v, cpu err %v, bytes equal %v", i, got[i].Err, want[i].Err, string(got[i].Dst) == string(want[i].Dst))
				}
			}
		})
	}
}
