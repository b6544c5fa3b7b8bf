package httpstore

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// FuzzCatalog feeds arbitrary consolidated metadata (v2 .zmetadata, v3
// zarr.json) to the catalog an HTTP store builds its tree from: no panics,
// and every directory and name it then knows is a valid key under the
// store root, whatever the document names ("../x", "", "a//b").
func FuzzCatalog(f *testing.F) {
	if shared := testutil.SharedDir(); shared != "" { // seeds, where the shared data is
		filepath.WalkDir(filepath.Join(shared, "conformance"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && (d.Name() == ".zmetadata" || d.Name() == "zarr.json") {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b, d.Name() == "zarr.json")
				}
			}
			return nil
		})
	}
	f.Add([]byte(`{"metadata":{"../x/.zarray":{},"a//b/.zgroup":{},"ok/.zarray":{"zarr_format":2,"shape":[4,4],"dimension_separator":"/"}}}`), false)
	f.Add([]byte(`{"consolidated_metadata":{"metadata":{"..":{},"":{},"a":{"zarr_format":3,"node_type":"array","shape":[2,2]}}}}`), true)
	f.Fuzz(func(t *testing.T, doc []byte, v3 bool) {
		c := newCatalog()
		if v3 {
			c.consolidatedV3("g/zarr.json", doc)
		} else {
			c.consolidatedV2("g/.zmetadata", doc)
		}
		for dir, names := range c.dirs {
			if dir != "." && !fs.ValidPath(dir) {
				t.Fatalf("directory %q", dir)
			}
			for name := range names {
				if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
					t.Fatalf("name %q in %q", name, dir)
				}
			}
		}
		for dir := range c.arrays {
			if !fs.ValidPath(dir) {
				t.Fatalf("array %q", dir)
			}
			c.chunkDir(dir + "/c/0")
			c.array(dir + "/0.0")
		}
	})
}

// FuzzURL: the URL of any valid key lies under the base URL, keeps the
// base's query, and names exactly that key (each element escaped, so
// "%2e%2e", "?" or "#" in a name stay inside it).
func FuzzURL(f *testing.F) {
	for _, k := range []string{"a/.zarray", "my group/0.0", "x%2e%2e/y", "a?b#c/d", "c/0/1", "ü/é"} {
		f.Add(k)
	}
	base, err := url.Parse("https://example.org/data/store.zarr?token=abc")
	if err != nil {
		f.Fatal(err)
	}
	s := &Store{base: base}
	f.Fuzz(func(t *testing.T, key string) {
		if !fs.ValidPath(key) || key == "." {
			return
		}
		u, err := url.Parse(s.url(key))
		if err != nil {
			t.Fatalf("url(%q) = %q: %v", key, s.url(key), err)
		}
		if u.Host != base.Host || u.RawQuery != base.RawQuery || u.Fragment != "" {
			t.Fatalf("url(%q) = %q: another host, query or a fragment", key, s.url(key))
		}
		rest, ok := strings.CutPrefix(u.Path, base.Path+"/")
		if !ok || rest != key {
			t.Fatalf("url(%q) = %q names %q", key, s.url(key), u.Path)
		}
	})
}
