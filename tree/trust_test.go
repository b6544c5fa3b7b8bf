package tree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
	"github.com/zfuse/zfuse/store"
)

// countingStore counts the requests made of a store, by "OP KEY".
type countingStore struct {
	store.Store
	mu sync.Mutex
	n  map[string]int
}

func counting(s store.Store) *countingStore { return &countingStore{Store: s, n: map[string]int{}} }

func (c *countingStore) count(op, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op+" "+key]++
}

// take returns the requests counted since the last take, sorted.
func (c *countingStore) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(c.n)) {
		for range c.n[k] {
			out = append(out, k)
		}
	}
	c.n = map[string]int{}
	return out
}

func (c *countingStore) ReadKey(ctx context.Context, key string) ([]byte, error) {
	c.count("read", key)
	return c.Store.ReadKey(ctx, key)
}

func (c *countingStore) ReadKeyRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c.count("read", key)
	return c.Store.ReadKeyRange(ctx, key, off, n)
}

func (c *countingStore) List(ctx context.Context, dir string) ([]store.Entry, error) {
	c.count("list", dir)
	return c.Store.List(ctx, dir)
}

func (c *countingStore) Stat(ctx context.Context, key string) (store.Entry, error) {
	c.count("stat", key)
	return c.Store.Stat(ctx, key)
}

// consolidatedZarray is the .zarray of the arrays writeConsolidated
// writes, of shape (rows, 4): legacy (no dimension_separator), as
// zarr-python 2 writes them.
func consolidatedZarray(rows int) string {
	return fmt.Sprintf(`{"chunks": [2, 4], "compressor": {"id": "zlib", "level": 1}, "dtype": "|u1", "fill_value": 0, "filters": null, "order": "C", "shape": [%d, 4], "zarr_format": 2}`, rows)
}

// writeConsolidated writes a v2 store of n arrays a000, a001, ... of 4x4
// uint8 in zlib chunks of 2x4 (chunk 0.0 holds i, i+1, ... for array i;
// 1.0 is missing) under a group with .zmetadata, and returns its root.
func writeConsolidated(t *testing.T, n int) string {
	root := t.TempDir()
	entries := map[string]json.RawMessage{".zgroup": json.RawMessage(`{"zarr_format": 2}`)}
	testutil.WriteFile(t, root, ".zgroup", []byte(`{"zarr_format": 2}`))
	for i := range n {
		name := fmt.Sprintf("a%03d", i)
		za := consolidatedZarray(4)
		testutil.WriteFile(t, root, name+"/.zarray", []byte(za))
		testutil.WriteFile(t, root, name+"/.zattrs", []byte(`{"i": `+fmt.Sprint(i)+`}`))
		testutil.WriteFile(t, root, name+"/0.0", testutil.ZlibBytes(t, chunkOf(i)))
		entries[name+"/.zarray"] = json.RawMessage(za)
		entries[name+"/.zattrs"] = json.RawMessage(`{"i": ` + fmt.Sprint(i) + `}`)
	}
	writeZmetadata(t, root, entries)
	return root
}

// chunkOf is the decoded chunk 0.0 of array i of writeConsolidated.
func chunkOf(i int) []byte {
	b := make([]byte, 8)
	for k := range b {
		b[k] = byte(i + k)
	}
	return b
}

func writeZmetadata(t *testing.T, root string, entries map[string]json.RawMessage) {
	b, err := json.Marshal(map[string]any{"zarr_consolidated_format": 1, "metadata": entries})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, root, ".zmetadata", b)
}

// trusting sets Config.TrustConsolidated.
func trusting(c *Config) { c.TrustConsolidated = true }

// TestTrustConsolidatedStart: a tree that trusts consolidated metadata
// finds its root, says it holds arrays, lists the root and serves the
// root's .zmetadata with the same requests whatever the number of arrays
// (none of them about an array), and serves what the tree that reads
// every array's documents first serves. An array's own documents are read
// when a chunk of it is, and only that array's.
func TestTrustConsolidatedStart(t *testing.T) {
	ctx := context.Background()
	start := func(t *testing.T, root string) (*Tree, *countingStore, []string, []byte) {
		cs := counting(dirStore(t, root))
		tr, _ := treeOver(t, cs, trusting)
		ok, err := tr.HasArray(ctx)
		if err != nil || !ok {
			t.Fatalf("HasArray = %v, %v", ok, err)
		}
		r, err := tr.Root(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := tr.Children(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) < 3 {
			t.Fatalf("root lists %d entries", len(ns))
		}
		zm, err := tr.ReadFile(ctx, ".zmetadata")
		if err != nil {
			t.Fatal(err)
		}
		return tr, cs, cs.take(), zm
	}
	_, _, few, _ := start(t, writeConsolidated(t, 3))
	root := writeConsolidated(t, 60)
	tr, cs, many, zm := start(t, root)
	if !slices.Equal(few, many) {
		t.Errorf("requests to start, list the root and read .zmetadata: %d arrays %q, %d arrays %q; want the same", 3, few, 60, many)
	}
	for _, r := range many {
		if strings.Contains(r, " a0") {
			t.Errorf("request %q about an array before any is used", r)
		}
	}
	eager, _ := treeOver(t, dirStore(t, root))
	if want := testutil.Must(eager.ReadFile(ctx, ".zmetadata")); !bytes.Equal(zm, want) {
		t.Errorf(".zmetadata trusted:\n%s\nwant, as with every .zarray read first:\n%s", zm, want)
	}
	if n := testutil.Must(tr.Lookup(ctx, ".zmetadata")); !n.MayChange() {
		t.Errorf(".zmetadata of a trusting tree: MayChange false")
	}
	if n := testutil.Must(eager.Lookup(ctx, ".zmetadata")); n.MayChange() {
		t.Errorf(".zmetadata of a tree reading every array first: MayChange true")
	}
	cs.take()

	dir := testutil.Must(tr.Lookup(ctx, "a007"))
	got, err := tr.ReadFile(ctx, "a007/0.0")
	if err != nil || !bytes.Equal(got, chunkOf(7)) {
		t.Fatalf("a007/0.0 = %v, %v; want %v", got, err, chunkOf(7))
	}
	for _, r := range cs.take() {
		if !strings.Contains(r, " a007") {
			t.Errorf("reading a007/0.0: request %q", r)
		}
	}
	// Made from its own .zarray, the array is the one its entry made.
	n := testutil.Must(tr.Lookup(ctx, "a007/0.0"))
	if a, _ := n.Chunk(); a != dir.Array() || a == nil {
		t.Errorf("the chunk's array %p, its directory's (from .zmetadata) %p: want one", a, dir.Array())
	}
	if got, want := testutil.Must(tr.ReadFile(ctx, "a007/.zarray")), testutil.Must(eager.ReadFile(ctx, "a007/.zarray")); !bytes.Equal(got, want) {
		t.Errorf("a007/.zarray trusted:\n%s\nwant\n%s", got, want)
	}
}

// TestTrustConsolidatedOwnWins: where an array's own documents, read when
// it is used, say otherwise than its consolidated entry (an array grown,
// or whose .zarray is invalid, since consolidation), they win, and the
// consolidated metadata is presented anew: a v2 .zmetadata, and a v3
// group's zarr.json, also through the node of the group looked up before.
func TestTrustConsolidatedOwnWins(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(key, data string) { testutil.WriteFile(t, root, key, []byte(data)) }
	write(".zgroup", `{"zarr_format": 2}`)
	write("grown/.zarray", consolidatedZarray(6))
	write("grown/0.0", string(testutil.ZlibBytes(t, chunkOf(1))))
	write("bad/.zarray", consolidatedZarray(4)[:40]) // truncated
	write("bad/0.0", string(testutil.ZlibBytes(t, chunkOf(2))))
	writeZmetadata(t, root, map[string]json.RawMessage{".zgroup": json.RawMessage(`{"zarr_format": 2}`),
		"grown/.zarray": json.RawMessage(consolidatedZarray(4)), "bad/.zarray": json.RawMessage(consolidatedZarray(4))})
	zj := func(n int) string {
		return fmt.Sprintf(`{"zarr_format": 3, "node_type": "array", "shape": [%d], "data_type": "uint8",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
			"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
			"fill_value": 0, "codecs": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}], "attributes": {}}`, n)
	}
	write("v3/zarr.json", `{"zarr_format": 3, "node_type": "group", "attributes": {},
		"consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {"a": `+zj(4)+`}}}`)
	write("v3/a/zarr.json", zj(6))
	tr, logs := treeOver(t, dirStore(t, root), trusting)

	shape := func(doc []byte, entry string) string {
		var d struct {
			Metadata     map[string]struct{ Shape []int } `json:"metadata"`
			Consolidated struct {
				Metadata map[string]struct{ Shape []int } `json:"metadata"`
			} `json:"consolidated_metadata"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if e, ok := d.Metadata[entry]; ok {
			return fmt.Sprint(e.Shape)
		}
		return fmt.Sprint(d.Consolidated.Metadata[entry].Shape)
	}
	zm := testutil.Must(tr.ReadFile(ctx, ".zmetadata"))
	if s := shape(zm, "grown/.zarray"); s != "[4 4]" {
		t.Errorf(".zmetadata before grown is used: shape %s, want its entry's [4 4]", s)
	}
	if c := compressor(t, entry(t, zm, "bad/.zarray")); c != "null" {
		t.Errorf(".zmetadata before bad is used: compressor %s, want null (its entry is valid)", c)
	}
	v3 := testutil.Must(tr.Lookup(ctx, "v3"))
	if s := shape(testutil.Must(tr.ReadFile(ctx, "v3/zarr.json")), "a"); s != "[4]" {
		t.Errorf("v3/zarr.json before a is used: shape %s, want [4]", s)
	}

	if got := testutil.Must(tr.ReadFile(ctx, "grown/.zarray")); !strings.Contains(string(got), "6,") {
		t.Errorf("grown/.zarray = %s, want its own shape [6, 4]", got)
	}
	if got := testutil.Must(tr.ReadFile(ctx, "bad/0.0")); !bytes.Equal(got, testutil.ZlibBytes(t, chunkOf(2))) {
		t.Errorf("bad/0.0 = %x, want it as stored (its .zarray is invalid)", got)
	}
	testutil.Must(tr.ReadFile(ctx, "v3/a/zarr.json"))
	zm = testutil.Must(tr.ReadFile(ctx, ".zmetadata"))
	if s := shape(zm, "grown/.zarray"); s != "[6 4]" {
		t.Errorf(".zmetadata once grown is used: shape %s, want its own [6 4]", s)
	}
	if c := compressor(t, entry(t, zm, "bad/.zarray")); c != `{"id":"zlib","level":1}` {
		t.Errorf(".zmetadata once bad is used: compressor %s, want as stored (it is passed through)", c)
	}
	n := testutil.Must(tr.Child(ctx, v3, "zarr.json"))
	if s := shape(testutil.Must(tr.ReadAt(ctx, n, make([]byte, n.Size()), 0, 0)), "a"); s != "[6]" {
		t.Errorf("v3/zarr.json once a is used, through the group's node from before: shape %s, want [6]", s)
	}
	for _, key := range []string{"grown", "bad", "v3/a"} {
		if !strings.Contains(logs.String(), "otherwise than its own documents: they win, and the consolidated metadata is presented anew\" key="+key) {
			t.Errorf("no Warn line naming %s:\n%s", key, logs)
		}
	}
}

// TestTrustConsolidatedLegacyNested: a legacy array (no
// dimension_separator) whose chunks are nested ("0/0") is presented with
// "0.0" keys while only its consolidated entry is read, as zarr-python
// reads such an entry; once its own documents are read it is found
// nested, .zmetadata says so, and the chunks still read under the names
// that were presented, never as missing.
func TestTrustConsolidatedLegacyNested(t *testing.T) {
	ctx := context.Background()
	s := testutil.NewV2Store(t)
	tr, logs := newTestTree(t, s, trusting)
	if e := entry(t, testutil.Must(tr.ReadFile(ctx, ".zmetadata")), "legacy/.zarray"); strings.Contains(string(e), "dimension_separator") {
		t.Errorf(".zmetadata's legacy entry before the array is used: %s, want no dimension_separator", e)
	}
	for _, key := range []string{"legacy/0.0", "legacy/1.1", "legacy/0/0"} {
		nested := strings.ReplaceAll(key, ".", "/")
		got, err := tr.ReadFile(ctx, key)
		if err != nil || !bytes.Equal(got, s.Raw[nested]) {
			t.Errorf("%s = %x, %v; want %s decoded, %x", key, got, err, nested, s.Raw[nested])
		}
	}
	if e := entry(t, testutil.Must(tr.ReadFile(ctx, ".zmetadata")), "legacy/.zarray"); !strings.Contains(compact(t, e), `"dimension_separator":"/"`) {
		t.Errorf(".zmetadata's legacy entry once the array is used: %s, want dimension_separator /", e)
	}
	if !strings.Contains(logs.String(), "key=legacy") {
		t.Errorf("no Warn line naming legacy:\n%s", logs)
	}
}

// entry returns the entry key of a .zmetadata document.
func entry(t *testing.T, zmetadata []byte, key string) []byte {
	var d struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(zmetadata, &d); err != nil {
		t.Fatal(err)
	}
	return d.Metadata[key]
}

// TestTrustConsolidatedOwnUnreadable: where an array's own documents
// cannot be read, its consolidated entry stands (its chunks read), with a
// Warn line, and they are tried again ownRetry later, not at each lookup.
func TestTrustConsolidatedOwnUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		root := writeConsolidated(t, 2)
		flaky := &flakyStore{DirStore: dirStore(t, root).(*store.DirStore), down: map[string]bool{"a001/.zarray": true}}
		cs := counting(flaky)
		tr, logs := treeOver(t, cs, trusting)
		for _, p := range []string{"a001/0.0", "a001/1.0", "a001/0.0"} {
			got, err := tr.ReadFile(ctx, p)
			if p == "a001/1.0" {
				if !errors.Is(err, ErrNotStored) {
					t.Errorf("%s: %v, want ErrNotStored", p, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, chunkOf(1)) {
				t.Errorf("%s while a001/.zarray fails: %v, %v; want %v, as its entry describes it", p, got, err, chunkOf(1))
			}
		}
		if r := cs.take(); countOf(r, "read a001/.zarray") != 1 {
			t.Errorf("reading a001's chunks three times tried a001/.zarray %d times, want once: %q", countOf(r, "read a001/.zarray"), r)
		}
		if !strings.Contains(logs.String(), "cannot read a directory's own metadata") {
			t.Errorf("no Warn line:\n%s", logs)
		}
		testutil.Must(tr.ReadFile(ctx, "a001/0.0"))
		if r := cs.take(); slices.Contains(r, "read a001/.zarray") {
			t.Errorf("a001/.zarray tried again at once: %q", r)
		}
		flaky.mu.Lock()
		flaky.down = nil
		flaky.mu.Unlock()
		time.Sleep(ownRetry + time.Second)
		testutil.Must(tr.ReadFile(ctx, "a001/0.0"))
		if r := cs.take(); !slices.Contains(r, "read a001/.zarray") {
			t.Errorf("a001/.zarray not tried again %v later: %q", ownRetry, r)
		}
	})
}

// TestTrustConsolidatedNpy: under AsNpy, an array's .npy and .json files
// are made from its own documents, as by a tree that reads them first;
// where those cannot be read, its files fail (EIO), not go missing.
func TestTrustConsolidatedNpy(t *testing.T) {
	ctx := context.Background()
	root := writeConsolidated(t, 3)
	npy := func(c *Config) { c.AsNpy = true }
	flaky := &flakyStore{DirStore: dirStore(t, root).(*store.DirStore), down: map[string]bool{"a002/.zarray": true}}
	tr, _ := treeOver(t, flaky, trusting, npy)
	eager, _ := treeOver(t, dirStore(t, root), npy)
	names := nodeNames(testutil.Must(tr.Children(ctx, testutil.Must(tr.Root(ctx)))))
	if want := nodeNames(testutil.Must(eager.Children(ctx, testutil.Must(eager.Root(ctx))))); !slices.Equal(names, slices.DeleteFunc(want, func(n string) bool { return strings.HasPrefix(n, "a002.") })) {
		t.Errorf("the root lists %v; want %v without a002's files", names, want)
	}
	for _, p := range []string{"a001.npy", "a001.json", "a000.npy"} {
		if got, want := testutil.Must(tr.ReadFile(ctx, p)), testutil.Must(eager.ReadFile(ctx, p)); !bytes.Equal(got, want) {
			t.Errorf("%s trusted: %q, want %q", p, got, want)
		}
	}
	if _, err := tr.ReadFile(ctx, "a002.npy"); tr.Errno(ctx, "lookup", "a002.npy", err) != syscall.EIO {
		t.Errorf("a002.npy while a002/.zarray fails: %v, want EIO", err)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// TestUnreadableDirectory: an array whose metadata cannot be read (a
// server error after the store's retries) does not fail the tree: the
// tree holds arrays, its parent lists it as a directory, looking into it
// fails with EIO and a log line naming the key, and zfuse info says so;
// once the store answers, the next lookup reads it.
func TestUnreadableDirectory(t *testing.T) {
	ctx := context.Background()
	root := writeConsolidated(t, 2)
	os.Remove(filepath.Join(root, ".zmetadata")) // no consolidated metadata
	flaky := &flakyStore{DirStore: dirStore(t, root).(*store.DirStore), down: map[string]bool{"a001/.zarray": true}}
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprintf("trust=%v", trust), func(t *testing.T) {
			flaky.mu.Lock()
			flaky.down = map[string]bool{"a001/.zarray": true}
			flaky.mu.Unlock()
			tr, logs := treeOver(t, flaky, func(c *Config) { c.TrustConsolidated = trust })
			if ok, err := tr.HasArray(ctx); !ok || err != nil {
				t.Errorf("HasArray = %v, %v", ok, err)
			}
			r := testutil.Must(tr.Root(ctx))
			ns, err := tr.Children(ctx, r)
			if err != nil {
				t.Fatalf("listing the root: %v", err)
			}
			if names := nodeNames(ns); !slices.Contains(names, "a001") || !slices.Contains(names, "a000") {
				t.Errorf("the root lists %v, want a000 and a001", names)
			}
			_, err = tr.ReadFile(ctx, "a001/0.0")
			if e := tr.Errno(ctx, "lookup", "a001/0.0", err); e != syscall.EIO || !strings.Contains(logs.String(), "a001/.zarray") {
				t.Errorf("a001/0.0 while a001/.zarray fails: %v (errno %v), want EIO and a log line naming a001/.zarray:\n%s", err, e, logs)
			}
			infos := testutil.Must(tr.Arrays(ctx))
			if i := slices.IndexFunc(infos, func(in ArrayInfo) bool { return in.Path == "a001" }); i < 0 || infos[i].Unreadable == nil {
				t.Errorf("Arrays: %+v, want a001 unreadable", infos)
			}
			if got, err := tr.ReadFile(ctx, "a000/0.0"); err != nil || !bytes.Equal(got, chunkOf(0)) {
				t.Errorf("a000/0.0 = %v, %v", got, err)
			}
			flaky.mu.Lock()
			flaky.down = nil
			flaky.mu.Unlock()
			// Through the node of the root listed before, as a mount asks.
			for _, n := range ns {
				if n.Name() != "a001" {
					continue
				}
				c, err := tr.Child(ctx, n, "0.0")
				if err != nil {
					t.Fatalf("a001/0.0 once the store answers: %v", err)
				}
				if got, err := tr.ReadAt(ctx, c, make([]byte, c.Size()), 0, 0); err != nil || !bytes.Equal(got, chunkOf(1)) {
					t.Errorf("a001/0.0 once the store answers: %v, %v", got, err)
				}
			}
		})
	}
}

func nodeNames(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name())
	}
	return out
}

// TestRefreshKeepsArray: with Config.Refresh, metadata read again that has
// not changed gives the same *zarr.Array, so that chunk files of before
// and after the refresh (which keep their inodes) are one array to
// readahead; metadata that changed gives another.
func TestRefreshKeepsArray(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := testutil.NewV2Store(t)
		tr, _ := newTestTree(t, s, func(c *Config) { c.Refresh = time.Second })
		chunkArray := func() any {
			n, err := tr.Lookup(ctx, "temp/0.0")
			if err != nil {
				t.Fatal(err)
			}
			a, _ := n.Chunk()
			return a
		}
		a := chunkArray()
		time.Sleep(2 * time.Second)
		if b := chunkArray(); b != a {
			t.Errorf("after a refresh of unchanged metadata: array %p, before %p; want one", b, a)
		}
		za := testutil.Must(os.ReadFile(filepath.Join(s.Root, "temp/.zarray")))
		testutil.WriteFile(t, s.Root, "temp/.zarray", bytes.Replace(za, []byte(`"order"`), []byte(`"dummy": 1, "order"`), 1))
		time.Sleep(2 * time.Second)
		if b := chunkArray(); b == a {
			t.Errorf("after a refresh of changed metadata: the same array")
		}
	})
}
