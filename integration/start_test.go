package integration

// This file checks how a mount of a remote store starts, and what it reads
// to start: with consolidated metadata, a few requests whatever the number
// of arrays; without, none per array until one is used; under faults, no
// one document refuses the mount.

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// manyArray is one array manyArrays writes: its name and its chunk 0.0
// decoded.
type manyArray struct {
	name  string
	chunk []byte
}

// manyArrays writes into root a v2 group of n small arrays, as zarr-python
// 2.13 writes them (no dimension_separator): a00000, a00001, ..., each of
// 4x4 uint8 in zlib chunks of 2x4, chunk 0.0 stored and 1.0 never written,
// with a .zattrs; and, if consolidated, the group's .zmetadata.
func manyArrays(t testing.TB, root string, n int, consolidated bool) []manyArray {
	t.Helper()
	entries := map[string]json.RawMessage{".zgroup": json.RawMessage(`{"zarr_format": 2}`)}
	write := func(key string, b []byte) {
		p := filepath.Join(root, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".zgroup", []byte(`{"zarr_format": 2}`))
	za := []byte(`{"chunks": [2, 4], "compressor": {"id": "zlib", "level": 1}, "dtype": "|u1", "fill_value": 0, "filters": null, "order": "C", "shape": [4, 4], "zarr_format": 2}`)
	out := make([]manyArray, n)
	for i := range n {
		a := manyArray{name: fmt.Sprintf("a%05d", i), chunk: make([]byte, 8)}
		for k := range a.chunk {
			a.chunk[k] = byte(i + k)
		}
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write(a.chunk)
		w.Close()
		attrs := []byte(fmt.Sprintf(`{"i": %d}`, i))
		write(a.name+"/.zarray", za)
		write(a.name+"/.zattrs", attrs)
		write(a.name+"/0.0", z.Bytes())
		entries[a.name+"/.zarray"], entries[a.name+"/.zattrs"] = za, attrs
		out[i] = a
	}
	if consolidated {
		b, err := json.Marshal(map[string]any{"zarr_consolidated_format": 1, "metadata": entries})
		if err != nil {
			t.Fatal(err)
		}
		write(".zmetadata", b)
	}
	return out
}

// TestConsolidatedStart: a mount of a consolidated store over HTTP (nginx,
// 20 ms added to each request) and S3 (versitygw) lists its root with as
// many requests for 10 arrays as for 10,000, none about an array, and at
// most 5 over HTTP: consolidated metadata exists so that a reader needs
// one request. Through the mount, .zmetadata says every array is
// uncompressed, and a chunk read decodes, with requests about its array
// only. The time from starting zfuse to the listed root is logged.
func TestConsolidatedStart(t *testing.T) {
	needMount(t)
	sizes := []int{10, 10000}
	stores := map[int]string{}
	for _, n := range sizes {
		stores[n] = filepath.Join(t.TempDir(), "src")
		manyArrays(t, stores[n], n, true)
	}
	check := func(t *testing.T, px *proxy, source string, n int, flags ...string) (start, list []string) {
		begin := time.Now()
		m := mount(t, source, flags...)
		start = px.requests()
		es, err := os.ReadDir(m.Dir)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(begin)
		list = px.requests()
		t.Logf("%d arrays: root listed %v after starting zfuse; %d requests to start, %d more to list: %q",
			n, took.Round(time.Millisecond), len(start), len(list), append(start, list...))
		if len(es) != n+2 { // the arrays, .zgroup and .zmetadata
			t.Errorf("the root lists %d entries, want %d", len(es), n+2)
		}
		for _, r := range append(start, list...) {
			if strings.Contains(r, "/a0") {
				t.Errorf("%s before any array is used", r)
			}
		}
		zm, err := os.ReadFile(filepath.Join(m.Dir, ".zmetadata"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Metadata map[string]struct {
				Compressor json.RawMessage `json:"compressor"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(zm, &doc); err != nil {
			t.Fatalf(".zmetadata: %v", err)
		}
		arrays := 0
		for k, e := range doc.Metadata {
			if strings.HasSuffix(k, "/.zarray") {
				arrays++
				if string(e.Compressor) != "null" {
					t.Fatalf(".zmetadata: %s has compressor %s", k, e.Compressor)
				}
			}
		}
		if arrays != n {
			t.Errorf(".zmetadata describes %d arrays, want %d", arrays, n)
		}
		px.requests()
		name := fmt.Sprintf("a%05d", n-1)
		got, err := os.ReadFile(filepath.Join(m.Dir, name, "0.0"))
		want := make([]byte, 8)
		for k := range want {
			want[k] = byte(n - 1 + k)
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/0.0 = %v, %v; want %v", name, got, err, want)
		}
		for _, r := range px.requests() {
			if !strings.Contains(r, "/"+name+"/") {
				t.Errorf("reading %s/0.0: %s", name, r)
			}
		}
		m.stop(t, syscall.SIGTERM)
		return start, list
	}
	t.Run("http", func(t *testing.T) {
		var first []string
		for _, n := range sizes {
			_, base := startNginx(t, stores[n])
			px := startProxy(t, base)
			px.delay.Store(int64(20 * time.Millisecond))
			start, list := check(t, px, px.URL, n)
			all := append(start, list...)
			if len(all) > 5 {
				t.Errorf("%d arrays: %d requests before the root is listed, want at most 5", n, len(all))
			}
			if first == nil {
				first = all
			} else if len(all) != len(first) {
				t.Errorf("%d requests before the root is listed for %d arrays, %d for %d", len(all), n, len(first), sizes[0])
			}
		}
	})
	t.Run("s3", func(t *testing.T) {
		s3Setenv(t)
		var first []string
		for _, n := range sizes {
			root := t.TempDir() // the store moves into a bucket: http ran first
			if err := os.Mkdir(filepath.Join(root, "bucket"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(stores[n], filepath.Join(root, "bucket", "src")); err != nil {
				t.Fatal(err)
			}
			_, endpoint := startVersitygw(t, root)
			px := startProxy(t, endpoint)
			start, _ := check(t, px, "s3://bucket/src", n, "--s3-endpoint", px.URL, "--s3-path-style")
			if first == nil {
				first = start
			} else if len(start) != len(first) {
				t.Errorf("%d requests to start for %d arrays, %d for %d", len(start), n, len(first), sizes[0])
			}
		}
	})
}

// TestMountStartFaults: mounts of the reliability stores over HTTP start
// while a fault proxy drops connections, cuts bodies short, answers 503
// and 429 and stalls on about half of the requests: ten mounts of ten, and
// once the faults stop every read through each is right. One document
// that five tries did not get used to refuse the mount.
func TestMountStartFaults(t *testing.T) {
	dir := stores(t, "small")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ZFUSE_FAULT_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("fault schedule seed %d (set ZFUSE_FAULT_SEED to repeat it)", seed)
	_, base := startNginx(t, filepath.Join(dir, "src"))
	px := startFaultProxy(t, base, seed)
	flags := append([]string{"--as-v2", "--http-timeout", "1s", "--cache-decoded", "2MiB", "--cache-compressed", "0", "--readahead", "2MiB"}, reliabilityHints...)
	readArgs := [][]string{append([]string{"zarr"}, reliabilityArrays...), {"files", "--threads", "2", "--order", "random"}}
	const mounts = 10
	started := 0
	for i := range mounts {
		px.inject("", 0)
		px.inject(faultMix, 0.48)
		begin := time.Now()
		m := mount(t, px.URL, flags...)
		st := px.counts()
		px.inject("", 0)
		started++
		after := checkedReaders(t, m, filepath.Join(dir, "want"), 3*time.Minute, readArgs...)
		t.Logf("mount %d: started in %v under %d faults of %d requests (%v); then %v", i+1, time.Since(begin).Round(time.Millisecond), st.Faults, st.Requests, st.ByKind, after)
		if after.Wrong > 0 || after.EIO > 0 || len(after.Errors) > 0 || after.Reads == 0 {
			t.Errorf("mount %d, after the faults stopped: %v; want every read right", i+1, after)
		}
		m.stop(t, syscall.SIGTERM)
	}
	t.Logf("%d of %d mounts started under faults", started, mounts)
}

// TestUnreadableArray: an S3 store (versitygw) without consolidated
// metadata, one of whose arrays' .zarray the server fails (503) for a
// while, mounts all the same: its root lists both arrays, the other reads,
// the failing one's chunks fail with EIO and a log line naming its
// .zarray, zfuse info says it could not be read, and once the server
// answers its chunks read right, with no remount.
func TestUnreadableArray(t *testing.T) {
	needMount(t)
	s3Setenv(t)
	root := t.TempDir()
	arrays := manyArrays(t, filepath.Join(root, "bucket", "src"), 2, false)
	_, endpoint := startVersitygw(t, root)
	px := startProxy(t, endpoint)
	bad := "/bucket/src/" + arrays[1].name + "/.zarray"
	px.failFor(bad, 1<<20)
	flags := []string{"--s3-endpoint", px.URL, "--s3-path-style"}
	m := mount(t, "s3://bucket/src", flags...)
	es, err := os.ReadDir(m.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if !slices.Contains(names, arrays[0].name) || !slices.Contains(names, arrays[1].name) {
		t.Errorf("the root lists %v, want both arrays", names)
	}
	read := func(a manyArray) ([]byte, error) { return os.ReadFile(filepath.Join(m.Dir, a.name, "0.0")) }
	if got, err := read(arrays[0]); err != nil || !bytes.Equal(got, arrays[0].chunk) {
		t.Errorf("%s/0.0 = %v, %v", arrays[0].name, got, err)
	}
	if _, err := read(arrays[1]); !errors.Is(err, syscall.EIO) {
		t.Errorf("%s/0.0 while its .zarray fails: %v, want EIO", arrays[1].name, err)
	}
	if !m.Stderr.waitFor(5*time.Second, holding(arrays[1].name+"/.zarray")) {
		t.Errorf("no log line names %s/.zarray:\n%s", arrays[1].name, m.Stderr)
	}
	lines := infoLines(t, append(flags, "s3://bucket/src")...)
	if l := lines[arrays[1].name]; !strings.Contains(l, "could not be read") {
		t.Errorf("zfuse info says of %s: %q, want that it could not be read", arrays[1].name, l)
	}
	px.failFor(bad, 0)
	if got, err := read(arrays[1]); err != nil || !bytes.Equal(got, arrays[1].chunk) {
		t.Errorf("%s/0.0 once the server answers: %v, %v; want %v", arrays[1].name, got, err, arrays[1].chunk)
	}
}

// TestLazyStart: a mount of an S3 store (versitygw, 20 ms added to each
// request) without consolidated metadata starts with the same requests
// for 5 arrays as for 300: the root's documents, and one array's to know
// there is one. Listing the root reads the arrays' documents, many at
// once; every chunk then reads right.
func TestLazyStart(t *testing.T) {
	needMount(t)
	s3Setenv(t)
	var first []string
	for _, n := range []int{5, 300} {
		root := t.TempDir()
		arrays := manyArrays(t, filepath.Join(root, "bucket", "src"), n, false)
		_, endpoint := startVersitygw(t, root)
		px := startProxy(t, endpoint)
		px.delay.Store(int64(20 * time.Millisecond))
		m := mount(t, "s3://bucket/src", "--s3-endpoint", px.URL, "--s3-path-style")
		start := px.requests()
		t.Logf("%d arrays: %d requests to start: %q", n, len(start), start)
		if first == nil {
			first = start
		} else if len(start) != len(first) {
			t.Errorf("%d requests to start for %d arrays, %d for 5", len(start), n, len(first))
		}
		px.takePeak()
		begin := time.Now()
		es, err := os.ReadDir(m.Dir)
		if err != nil {
			t.Fatal(err)
		}
		peak := px.takePeak()
		t.Logf("%d arrays: root listed in %v, %d requests, %d at most at once", n, time.Since(begin).Round(time.Millisecond), len(px.requests()), peak)
		if len(es) != n+1 { // and .zgroup
			t.Errorf("the root lists %d entries, want %d", len(es), n+1)
		}
		if n > 5 && peak < 4 {
			t.Errorf("listing the root: at most %d requests at once, want the arrays' documents read concurrently", peak)
		}
		for _, a := range []manyArray{arrays[0], arrays[n-1]} {
			if got, err := os.ReadFile(filepath.Join(m.Dir, a.name, "0.0")); err != nil || !bytes.Equal(got, a.chunk) {
				t.Errorf("%s/0.0 = %v, %v; want %v", a.name, got, err, a.chunk)
			}
		}
		m.stop(t, syscall.SIGTERM)
	}
}

// TestConsolidatedCorrected: over HTTP, an array grown since its store
// was consolidated is served as .zmetadata describes it until its own
// .zarray is read; then the mount serves .zmetadata anew, with the array's
// own shape, to a reader that read it before (at its next open, once the
// kernel asks again, a tick of its clock later), with no remount.
func TestConsolidatedCorrected(t *testing.T) {
	needMount(t)
	root := filepath.Join(t.TempDir(), "src")
	arrays := manyArrays(t, root, 3, true)
	grown := arrays[1].name
	za := `{"chunks": [2, 4], "compressor": {"id": "zlib", "level": 1}, "dtype": "|u1", "fill_value": 0, "filters": null, "order": "C", "shape": [6, 4], "zarr_format": 2}`
	if err := os.WriteFile(filepath.Join(root, grown, ".zarray"), []byte(za), 0o644); err != nil {
		t.Fatal(err)
	}
	_, base := startNginx(t, root)
	m := mount(t, base)
	shape := func() string {
		b, err := os.ReadFile(filepath.Join(m.Dir, ".zmetadata"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Metadata map[string]struct{ Shape []int } `json:"metadata"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf(".zmetadata: %v", err)
		}
		return fmt.Sprint(doc.Metadata[grown+"/.zarray"].Shape)
	}
	if s := shape(); s != "[4 4]" {
		t.Errorf(".zmetadata before %s is used: shape %s, want its entry's [4 4]", grown, s)
	}
	b, err := os.ReadFile(filepath.Join(m.Dir, grown, ".zarray"))
	if err != nil || !strings.Contains(string(b), "6,") {
		t.Fatalf("%s/.zarray = %s, %v; want its own shape [6, 4]", grown, b, err)
	}
	// The kernel keeps the entry of .zmetadata for a tick of its clock (a
	// few ms) before it asks again.
	deadline := time.Now().Add(time.Second)
	for s := shape(); s != "[6 4]"; s = shape() {
		if time.Now().After(deadline) {
			t.Fatalf(".zmetadata once %s's own .zarray is read: shape %s, want [6 4]", grown, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !m.Stderr.waitFor(5*time.Second, holding("key="+grown)) {
		t.Errorf("no log line names %s:\n%s", grown, m.Stderr)
	}
}

// TestRefreshManyArrays: a consolidated HTTP store of many arrays mounted
// with --refresh 1s: once the interval has passed, listing the root and
// reading .zmetadata again costs a request or two, not one per array, and
// reading a chunk of one array after another interval reads that array's
// documents and no other's. One array then grows (its .zarray and
// .zmetadata rewritten, as zarr-python appends): after an interval, the
// root and .zmetadata cost as many requests as before, and using the
// grown array reads its documents and its chunk only.
func TestRefreshManyArrays(t *testing.T) {
	needMount(t)
	const n = 300
	root := filepath.Join(t.TempDir(), "src")
	arrays := manyArrays(t, root, n, true)
	_, base := startNginx(t, root)
	px := startProxy(t, base)
	m := mount(t, px.URL, "--refresh", "1s")
	readRoot := func() {
		if _, err := os.ReadDir(m.Dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(filepath.Join(m.Dir, ".zmetadata")); err != nil {
			t.Fatal(err)
		}
	}
	readRoot()
	for _, a := range arrays[:2] {
		if got, err := os.ReadFile(filepath.Join(m.Dir, a.name, "0.0")); err != nil || !bytes.Equal(got, a.chunk) {
			t.Fatalf("%s/0.0 = %v, %v", a.name, got, err)
		}
	}
	px.requests()
	time.Sleep(2500 * time.Millisecond) // the interval passes: metadata is read again
	readRoot()
	if r := px.requests(); len(r) > 5 {
		t.Errorf("listing the root and reading .zmetadata after the interval: %d requests, want at most 5: %q", len(r), r)
	}
	time.Sleep(2500 * time.Millisecond)
	a := arrays[1]
	if got, err := os.ReadFile(filepath.Join(m.Dir, a.name, "0.0")); err != nil || !bytes.Equal(got, a.chunk) {
		t.Errorf("%s/0.0 = %v, %v", a.name, got, err)
	}
	for _, r := range px.requests() {
		if strings.Contains(r, "/a0") && !strings.Contains(r, "/"+a.name+"/") {
			t.Errorf("reading %s/0.0 after the interval: %s", a.name, r)
		}
	}

	g := arrays[2]
	grown := `{"chunks": [2, 4], "compressor": {"id": "zlib", "level": 1}, "dtype": "|u1", "fill_value": 0, "filters": null, "order": "C", "shape": [6, 4], "zarr_format": 2}`
	chunk := bytes.Repeat([]byte{7}, 8)
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(chunk)
	w.Close()
	writeRenamed(t, filepath.Join(root, g.name, "2.0"), z.Bytes())
	writeRenamed(t, filepath.Join(root, g.name, ".zarray"), []byte(grown))
	var zm map[string]any
	if err := json.Unmarshal(testutil.Must(os.ReadFile(filepath.Join(root, ".zmetadata"))), &zm); err != nil {
		t.Fatal(err)
	}
	zm["metadata"].(map[string]any)[g.name+"/.zarray"] = json.RawMessage(grown)
	writeRenamed(t, filepath.Join(root, ".zmetadata"), testutil.Must(json.Marshal(zm)))
	px.requests()
	time.Sleep(2500 * time.Millisecond)
	readRoot()
	if r := px.requests(); len(r) > 5 {
		t.Errorf("listing the root and reading .zmetadata after %s grew: %d requests, want at most 5: %q", g.name, len(r), r)
	}
	if b, err := os.ReadFile(filepath.Join(m.Dir, g.name, ".zarray")); err != nil || !strings.Contains(string(b), "6,") {
		t.Errorf("%s/.zarray after it grew: %s, %v; want shape [6, 4]", g.name, b, err)
	}
	if got, err := os.ReadFile(filepath.Join(m.Dir, g.name, "2.0")); err != nil || !bytes.Equal(got, chunk) {
		t.Errorf("%s/2.0, the chunk it grew by: %v, %v", g.name, got, err)
	}
	for _, r := range px.requests() {
		if strings.Contains(r, "/a0") && !strings.Contains(r, "/"+g.name+"/") {
			t.Errorf("using %s after it grew: %s", g.name, r)
		}
	}
}
