package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// plainZfuse is zfuse built without -race, for measuring memory: the race
// detector's shadow memory is several times the heap.
var plainZfuse = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(tmp, "zfuse-plain")
	cmd := exec.Command(testutil.GoTool(), "build", "-o", bin, "./cmd/zfuse")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building zfuse: %v\n%s", err, out)
	}
	return bin, nil
})

// raStore writes, with zarr-python, a float32 array of 64×512×512 (64 MiB)
// in 256 KiB chunks (1×256×256: a 64×2×2 grid) twice: Blosc-lz4+shuffle
// (comp.zarr) and uncompressed (raw.zarr).
const raStore = `
import sys, numpy as np, zarr, numcodecs
out = sys.argv[1]
rng = np.random.default_rng(7)
y = np.linspace(0, 6, 512, dtype=np.float32)
a = 280 + 10*np.sin(y)[None, :, None]*np.cos(y)[None, None, :] + np.arange(64, dtype=np.float32)[:, None, None]/8
a = (a + 0.2*rng.standard_normal(a.shape, dtype=np.float32)).astype("<f4")
for name, c in [("comp", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)), ("raw", None)]:
    z = zarr.open(f"{out}/{name}.zarr", mode="w", shape=a.shape, chunks=(1, 256, 256), dtype="<f4", compressor=c)
    z[...] = a
`

// raReader reads rows [lo, hi) of the array through the mount and checks
// them against the uncompressed store, then prints "ok".
const raReader = `
import sys, numpy as np, zarr
mnt, raw, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
m, r = zarr.open(mnt, mode="r"), zarr.open(raw, mode="r")
assert m.compressor is None, m.compressor
got, want = m[lo:hi], r[lo:hi]
if not np.array_equal(got, want):
    sys.exit(f"rows {lo}:{hi} differ in {int((got != want).sum())} values")
print("ok")
`

// TestReadaheadProcesses: four Python processes read disjoint slices of
// one array through a mount with readahead on, at the same time. Each gets
// exactly the bytes of the uncompressed twin; readahead serves most chunk
// reads, by a prefetched chunk or by pages it pushed before the read (each
// process scans its slice in order, and FUSE requests are attributed to
// processes); and the mount's peak RSS stays within its three budgets plus
// a margin, though the array is larger than all of them.
func TestReadaheadProcesses(t *testing.T) {
	needMount(t)
	needPython(t)
	bin, err := plainZfuse()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(testutil.Python, "-c", raStore, dir).CombinedOutput(); err != nil {
		t.Fatalf("writing the store: %v\n%s", err, out)
	}
	const decoded, compressed, ahead = 8 << 20, 4 << 20, 8 << 20
	stats := filepath.Join(dir, "stats.json")
	m := startMount(t, bin, filepath.Join(dir, "comp.zarr"), "--cache-decoded", "8MiB", "--cache-compressed", "4MiB",
		"--readahead", "8MiB", "--workers", "2", "--stats-file", stats)
	idle, err := procStatus(m.cmd.Process.Pid, "VmRSS")
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			cmd := exec.Command(testutil.Python, "-c", raReader, m.Dir, filepath.Join(dir, "raw.zarr"), strconv.Itoa(16*p), strconv.Itoa(16*p+16))
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Errorf("reader %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()

	hwm, err := procStatus(m.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	m.stop(t, syscall.SIGTERM)
	var doc struct {
		Stats struct {
			Reads, PrefetchUsed, StoreReads     int64
			Placed, PlacedRead                  int64
			ReadaheadPeak, ReadaheadBudget      int64
			DecodedBudget, CompressedBudget     int64
			PrefetchWastedBytes, PrefetchErrors int64
			Decode                              map[string]struct{ Chunks, Errors int64 }
		}
	}
	b, err := os.ReadFile(stats)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	if err != nil {
		t.Fatalf("stats file: %v", err)
	}
	st := doc.Stats
	t.Logf("mount: idle RSS %d MiB, peak %d MiB; %s", idle>>20, hwm>>20, b)
	served := st.Reads + st.Placed // a pushed chunk's read does not reach the mount
	if served < 256 || st.PrefetchErrors != 0 {
		t.Errorf("%d chunk reads and %d chunks pushed (want at least the 256 chunks), %d prefetch errors", st.Reads, st.Placed, st.PrefetchErrors)
	}
	// Each process reads its 64 chunks in order: a pattern after 3, so up
	// to 61 each could be prefetched; the shared 8 MiB budget (32 chunks
	// for 4 readers) cuts windows, so ask for half.
	if st.PrefetchUsed+st.Placed < served/2 {
		t.Errorf("readahead served %d of %d reads and pushed %d chunks, want at least half of them", st.PrefetchUsed, st.Reads, st.Placed)
	}
	if st.ReadaheadPeak > ahead || st.DecodedBudget != decoded || st.CompressedBudget != compressed {
		t.Errorf("readahead peak %d (budget %d), decoded budget %d, compressed budget %d", st.ReadaheadPeak, ahead, st.DecodedBudget, st.CompressedBudget)
	}
	// The margin above the budgets: the idle process (Go runtime, binary,
	// go-fuse; measured above), go-fuse's request buffers (1 MiB each, a
	// few in flight), each open chunk file's decoded chunk (a chunkHandle;
	// 4 readers), and garbage the collector has not yet freed, which the
	// soft memory limit (budgets + 64 MiB) keeps small.
	margin := idle + 64<<20
	if limit := int64(decoded+compressed+ahead) + margin; hwm > limit {
		t.Errorf("peak RSS %d MiB > budgets %d MiB + idle %d MiB + 64 MiB", hwm>>20, (decoded+compressed+ahead)>>20, idle>>20)
	}
}

// procStatus returns a "kB" field of /proc/PID/status in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
