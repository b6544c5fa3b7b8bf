package integration

// What the reliability tests (faults, load, crash, soak) share: the stores
// testdata/stores.py writes, with their uncompressed twins, and reader
// processes (testdata/checkedreads.py) that compare every byte they read
// through a mount with the twins.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

var reliabilityStores = struct {
	sync.Mutex
	dirs map[string]string
}{dirs: map[string]string{}}

// stores returns a directory where stores.py wrote, for size ("small",
// "load", "crash"), src/ (the stores to mount) and want/ (what the mount
// must serve); once per size and run.
func stores(t testing.TB, size string) string {
	t.Helper()
	needMount(t)
	needPython(t)
	reliabilityStores.Lock()
	defer reliabilityStores.Unlock()
	if d, ok := reliabilityStores.dirs[size]; ok {
		return d
	}
	d := filepath.Join(tmp, "stores-"+size)
	out, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "stores.py"), d, size).CombinedOutput()
	if err != nil {
		t.Fatalf("stores.py %s: %v\n%s", size, err, out)
	}
	reliabilityStores.dirs[size] = d
	return d
}

// The arrays of the stores, and the flags that name them for an HTTP
// source (which cannot list).
var (
	reliabilityArrays = []string{"v2.zarr/zstd", "v2.zarr/blosc", "v2.zarr/raw", "v2.zarr/small", "v3.zarr/sraw", "v3.zarr/szstd"}
	reliabilityHints  = []string{"--array", "v2.zarr", "--array", "v3.zarr", "--array", "v3.zarr/sraw", "--array", "v3.zarr/szstd"}
)

// A tally is what a reader process reports (checkedreads.py's summary).
type tally struct {
	Mode     string
	Reads    int
	Bytes    int64
	OK       int
	EIO      int
	Wrong    int
	Errors   map[string]int
	Examples []string
	Seconds  float64
}

func (a *tally) add(b tally) {
	a.Reads += b.Reads
	a.Bytes += b.Bytes
	a.OK += b.OK
	a.EIO += b.EIO
	a.Wrong += b.Wrong
	for k, v := range b.Errors {
		if a.Errors == nil {
			a.Errors = map[string]int{}
		}
		a.Errors[k] += v
	}
	a.Examples = append(a.Examples, b.Examples...)
	a.Seconds = max(a.Seconds, b.Seconds)
}

func (a tally) String() string {
	s := fmt.Sprintf("%d reads (%d ok, %d EIO, %d wrong), %.1f MB", a.Reads, a.OK, a.EIO, a.Wrong, float64(a.Bytes)/1e6)
	if len(a.Errors) > 0 {
		s += fmt.Sprintf(", other errors %v", a.Errors)
	}
	if len(a.Examples) > 0 {
		s += fmt.Sprintf("; e.g. %q", a.Examples[:min(len(a.Examples), 4)])
	}
	return s
}

// checkedReaders runs reader processes at once, each checkedreads.py with one of args
// (after the mode, mount and want: those are given), and returns their
// tallies summed. They must end within limit: a reader still running
// then is a hang, and fails the test with the mount's log.
func checkedReaders(t testing.TB, m *mounted, want string, limit time.Duration, args ...[]string) tally {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	var mu sync.Mutex
	var sum tally
	var wg sync.WaitGroup
	for _, a := range args {
		wg.Go(func() {
			argv := append([]string{filepath.Join(repo, "integration", "testdata", "checkedreads.py"), a[0], m.Dir, want}, a[1:]...)
			cmd := exec.CommandContext(ctx, testutil.Python, argv...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if ctx.Err() != nil {
				t.Errorf("checkedreads.py %v still running after %v: a hang?\nzfuse log:\n%s", a, limit, tail(m.Stderr.String(), 40))
				return
			}
			var r tally
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &r) != nil {
				t.Errorf("checkedreads.py %v: %v\n%s%s", a, err, out, stderr.String())
				return
			}
			mu.Lock()
			sum.add(r)
			mu.Unlock()
		})
	}
	wg.Wait()
	return sum
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
