package integration

// This file checks zfuse mount --refresh: a store that changes while it is
// mounted (chunks rewritten, an array appended to) is served as it is now
// within a few refresh intervals, every chunk file read whole from one
// version; and without --refresh its metadata is served as it was, and its
// chunks as they were while some cache keeps them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// refreshBound is how long a change may take to show through a mount with
// --refresh 1s: the kernel's entry timeout (one interval) and the store's
// facts going stale (another), with room for a race-enabled binary on a
// shared 2-core machine.
const refreshBound = 6 * time.Second

// TestRefresh writes a store with zarr-python, mounts it twice, with
// --refresh 1s and without, then rewrites two chunks and later appends
// rows (a grown shape, rewritten edge chunks, new chunk files). Through the
// refreshing mount every chunk file read equals the whole old or the whole
// new decoded chunk (never a mix) and, within refreshBound, the new one,
// and zarr-python reads the new array; through the other mount the
// metadata stays as first read, and every chunk file is the whole chunk as
// first read or, once the kernel has let its pages go (reclaim, DAMON) and
// zfuse reads the store again, as stored now: a store that changes is
// outside what a mount without --refresh promises. It runs on
// each serving path for a local store, and over HTTP (nginx).
func TestRefresh(t *testing.T) {
	needMount(t)
	needPython(t)
	for _, serving := range []string{"no-open", "open", "passthrough"} {
		t.Run("local/"+serving, func(t *testing.T) { testRefresh(t, serving, false) })
	}
	t.Run("http", func(t *testing.T) { testRefresh(t, "auto", true) })
}

func testRefresh(t *testing.T, serving string, remote bool) {
	dir := t.TempDir()
	src, raw := filepath.Join(dir, "src"), filepath.Join(dir, "raw")
	refreshStep(t, "write", src, raw)
	source := src
	if remote {
		_, source = startNginx(t, src)
	}
	live := mount(t, source, "--refresh", "1s", "--serving", serving)
	frozen := mount(t, source, "--serving", serving)
	if i := strings.Index(live.Stderr.String(), "serving path"); i >= 0 {
		t.Logf("%s", strings.SplitN(live.Stderr.String()[i:], "\n", 2)[0])
	}

	first, firstArr := rawChunks(t, raw), pyRead(t, raw)
	for _, m := range []*mounted{live, frozen} { // both read everything once: the kernel caches it
		checkServes(t, m.Dir, first, nil, []int{10, 8}, firstArr, pyArray{})
	}

	old := first
	for _, tc := range []struct {
		step  string
		shape []int
	}{
		{"rewrite", []int{10, 8}},
		{"append", []int{14, 8}},
	} {
		// nginx's ETag and Last-Modified count whole seconds: a change
		// within the second of the last would not show over HTTP.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		refreshStep(t, tc.step, src, raw)
		cur, curArr := rawChunks(t, raw), pyRead(t, raw)
		if reflect.DeepEqual(cur, old) {
			t.Fatalf("%s changed no chunk", tc.step)
		}
		took := converge(t, live, old, cur, tc.shape)
		t.Logf("%s: the new chunks served after %v", tc.step, took.Round(time.Millisecond))
		if got := pyRead(t, live.Dir); !reflect.DeepEqual(got, curArr) {
			t.Errorf("%s: zarr-python through the refreshing mount read shape %v, want the new array, shape %v", tc.step, got.Shape, curArr.Shape)
		}
		checkServes(t, frozen.Dir, first, cur, []int{10, 8}, firstArr, curArr)
		old = cur
	}
}

// refreshStep runs testdata/refresh.py STEP src raw.
func refreshStep(t *testing.T, step, src, raw string) {
	t.Helper()
	out, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "refresh.py"), step, src, raw).CombinedOutput()
	if err != nil {
		t.Fatalf("refresh.py %s: %v\n%s", step, err, out)
	}
}

// pyArray is what refresh.py read prints.
type pyArray struct {
	Shape []int
	Data  []int64
}

// pyRead reads the array at dir with zarr-python.
func pyRead(t *testing.T, dir string) pyArray {
	t.Helper()
	out, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "refresh.py"), "read", dir).Output()
	if err != nil {
		t.Fatalf("refresh.py read %s: %v", dir, err)
	}
	var a pyArray
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("refresh.py read %s: %v", dir, err)
	}
	return a
}

// rawChunks returns the chunk files of the uncompressed store raw: the
// decoded chunks, by name.
func rawChunks(t *testing.T, raw string) map[string][]byte {
	t.Helper()
	es, err := os.ReadDir(raw)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(raw, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

// shapeAt returns the shape the .zarray at dir says.
func shapeAt(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".zarray"))
	if err != nil {
		return nil, err
	}
	var m struct{ Shape []int }
	err = json.Unmarshal(b, &m)
	return m.Shape, err
}

// checkServes checks that the mount at dir serves the chunks want, an
// array of shape, and that zarr-python reads arr through it. A chunk file
// may instead be the whole chunk of now (nil: none), and an element of the
// array read that of nowArr (the store changed under a mount without
// --refresh, and the kernel let the file's pages go).
func checkServes(t *testing.T, dir string, want, now map[string][]byte, shape []int, arr, nowArr pyArray) {
	t.Helper()
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err == nil && bytes.Equal(got, b):
		case err == nil && now[name] != nil && bytes.Equal(got, now[name]):
			t.Logf("%s: served as stored now: the kernel had let its pages go", name)
		default:
			t.Errorf("%s: %d bytes, %v; want the chunk as first written", name, len(got), err)
		}
	}
	if s, err := shapeAt(dir); err != nil || !slices.Equal(s, shape) {
		t.Errorf(".zarray: shape %v, %v; want %v", s, err, shape)
	}
	got := pyRead(t, dir)
	if !slices.Equal(got.Shape, arr.Shape) || len(got.Data) != len(arr.Data) {
		t.Fatalf("zarr-python read shape %v, want the array as first written, shape %v", got.Shape, arr.Shape)
	}
	for i, v := range got.Data {
		if v != arr.Data[i] && (i >= len(nowArr.Data) || v != nowArr.Data[i]) {
			t.Fatalf("zarr-python read element %d as %d: neither as first written (%d) nor as stored now", i, v, arr.Data[i])
		}
	}
}

// converge reads every chunk file of cur through the mount at dir, with
// plain file reads, until each is served as cur has it and .zarray says
// shape, and returns how long that took. Every read must give the whole
// chunk of one version, old or cur (a new file may be missing until then);
// it fails the test at once on a mix, or after refreshBound.
func converge(t *testing.T, m *mounted, old, cur map[string][]byte, shape []int) time.Duration {
	t.Helper()
	dir := m.Dir
	defer func() {
		if t.Failed() {
			t.Logf("zfuse's log:\n%s", m.Stderr)
		}
	}()
	start := time.Now()
	for {
		done := true
		for name, want := range cur {
			got, err := os.ReadFile(filepath.Join(dir, name))
			switch {
			case errors.Is(err, fs.ErrNotExist) && old[name] == nil:
				done = false // a new chunk, not looked up again yet
			case err != nil:
				t.Fatalf("%s: %v", name, err)
			case bytes.Equal(got, want):
			case old[name] != nil && bytes.Equal(got, old[name]):
				done = false
			default:
				t.Fatalf("%s: %d bytes that are neither the old chunk nor the new one", name, len(got))
			}
		}
		if s, err := shapeAt(dir); err != nil {
			t.Fatalf(".zarray: %v", err)
		} else if !slices.Equal(s, shape) {
			done = false
		}
		if done {
			return time.Since(start)
		}
		if time.Since(start) > refreshBound {
			t.Fatalf("the changed store was not served within %v", refreshBound)
		}
		time.Sleep(50 * time.Millisecond) // polling the mount, as a reader would
	}
}
