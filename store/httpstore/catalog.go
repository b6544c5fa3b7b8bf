package httpstore

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Names of metadata documents. Only these are answered from the catalog.
var metaNames = []string{".zmetadata", ".zarray", ".zgroup", ".zattrs", "zarr.json"}

func isMeta(key string) bool { return slices.Contains(metaNames, path.Base(key)) }

// A catalog is what the store knows of the tree without a listing: the
// directories and metadata documents that consolidated metadata, probed
// documents and --array hints name, and the chunk key layout of each
// array. Chunk keys are not in it (HTTP cannot list them). It is safe for
// concurrent use.
type catalog struct {
	mu sync.RWMutex // guards the fields below
	// dirs maps a directory key ("." for the root) to the names directly
	// inside it that the catalog knows, each marked true for a directory.
	dirs map[string]map[string]bool
	// complete marks directories whose metadata documents are all known:
	// a metadata name missing from dirs[dir] does not exist.
	complete map[string]bool
	arrays   map[string]layout // array directory key -> chunk key layout
}

func newCatalog() *catalog {
	return &catalog{
		dirs:     map[string]map[string]bool{".": {}},
		complete: map[string]bool{},
		arrays:   map[string]layout{},
	}
}

// addDir records dir and every directory above it.
func (c *catalog) addDir(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addDirLocked(dir)
}

func (c *catalog) addDirLocked(dir string) {
	for dir != "." {
		if _, ok := c.dirs[dir]; ok {
			return
		}
		c.dirs[dir] = map[string]bool{}
		parent := path.Dir(dir)
		c.addDirLocked(parent)
		c.dirs[parent][path.Base(dir)] = true
	}
}

// addFile records the file key (and its directories).
func (c *catalog) addFile(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := path.Dir(key)
	c.addDirLocked(dir)
	c.dirs[dir][path.Base(key)] = false
}

// setComplete says every metadata document of dir is recorded.
func (c *catalog) setComplete(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.complete[dir] = true
}

// isDir reports whether the catalog knows dir as a directory.
func (c *catalog) isDir(dir string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.dirs[dir]
	return ok
}

// meta answers whether the metadata document key exists, if the catalog
// knows (known is false when a request must tell).
func (c *catalog) meta(key string) (exists, known bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	dir := path.Dir(key)
	isDir, ok := c.dirs[dir][path.Base(key)]
	if ok {
		return !isDir, true
	}
	return false, c.complete[dir]
}

// entries returns the names in dir: name -> is a directory.
func (c *catalog) entries(dir string) (map[string]bool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	m, ok := c.dirs[dir]
	if !ok {
		return nil, false
	}
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, true
}

// setArray records the layout of the array at dir.
func (c *catalog) setArray(dir string, l layout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addDirLocked(dir)
	c.arrays[dir] = l
}

// array returns the array that key lies in (key may be the array's
// directory) and key's path relative to it.
func (c *catalog) array(key string) (layout, string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for dir, rel := key, ""; ; {
		if l, ok := c.arrays[dir]; ok {
			return l, rel, true
		}
		if dir == "." {
			return layout{}, "", false
		}
		rel = path.Join(path.Base(dir), rel)
		dir = path.Dir(dir)
	}
}

// chunkDir reports whether key is a directory of chunk keys of an array
// the catalog knows ("c" and "c/0" of a 3-d v3 array; "0" of a 2-d v2
// array with dimension_separator "/").
func (c *catalog) chunkDir(key string) bool {
	l, rel, ok := c.array(key)
	return ok && rel != "" && l.chunkDir(rel)
}

// A layout is how an array names its chunk keys.
type layout struct {
	ndim   int
	prefix string // "c" for v3's default encoding, else ""
	sep    string // "/" or "."
	legacy bool   // v2 without dimension_separator: may be "." or nested "/"
}

// chunkDir reports whether rel, relative to the array, is a directory that
// holds chunk keys: the prefix and fewer grid indices than dimensions.
func (l layout) chunkDir(rel string) bool {
	if l.sep != "/" {
		return false
	}
	parts := strings.Split(rel, "/")
	if l.prefix != "" {
		if parts[0] != l.prefix {
			return false
		}
		parts = parts[1:]
	}
	if len(parts) >= l.ndim {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 63); err != nil {
			return false
		}
	}
	return true
}

// arrayMeta is the part of .zarray (v2) or zarr.json (v3) that says how
// chunk keys are named.
type arrayMeta struct {
	ZarrFormat int    `json:"zarr_format"`
	NodeType   string `json:"node_type"`
	Shape      []int  `json:"shape"`
	Sep        string `json:"dimension_separator"`
	Encoding   *struct {
		Name   string `json:"name"`
		Config struct {
			Sep string `json:"separator"`
		} `json:"configuration"`
	} `json:"chunk_key_encoding"`
}

// parseLayout reads the chunk key layout from an array's metadata
// document; ok is false for groups and documents that are not arrays.
func parseLayout(doc []byte) (layout, bool) {
	var m arrayMeta
	if json.Unmarshal(doc, &m) != nil || m.Shape == nil {
		return layout{}, false
	}
	l := layout{ndim: len(m.Shape)}
	switch {
	case m.ZarrFormat == 3 && m.NodeType != "array":
		return layout{}, false
	case m.ZarrFormat == 3 && m.Encoding != nil && m.Encoding.Name == "v2":
		l.sep = cmp(m.Encoding.Config.Sep, ".")
	case m.ZarrFormat == 3:
		l.prefix = "c"
		l.sep = "/"
		if m.Encoding != nil {
			l.sep = cmp(m.Encoding.Config.Sep, "/")
		}
	default:
		l.sep = cmp(m.Sep, ".")
		l.legacy = m.Sep == ""
	}
	return l, true
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// consolidatedV2 adds what a .zmetadata document at key names: every
// .zarray/.zgroup/.zattrs below its directory, and the layout of each
// array. Directories it names are complete.
func (c *catalog) consolidatedV2(key string, doc []byte) error {
	var m struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return &fs.PathError{Op: "parse", Path: key, Err: err}
	}
	if m.Metadata == nil {
		return &fs.PathError{Op: "parse", Path: key, Err: errors.New(`no "metadata" object`)}
	}
	root := path.Dir(key)
	c.addFile(key)
	c.setComplete(root)
	for k, v := range m.Metadata {
		full := path.Join(root, k)
		if !fs.ValidPath(full) || !isMeta(full) {
			continue
		}
		c.addFile(full)
		if path.Base(full) == ".zarray" {
			if l, ok := parseLayout(v); ok {
				c.setArray(path.Dir(full), l)
			}
		}
	}
	c.completeUnder(root)
	return nil
}

// consolidatedV3 adds what the consolidated metadata inside the zarr.json
// at key names (each node's zarr.json, and the layout of each array). It
// reports false when the document holds no consolidated metadata.
func (c *catalog) consolidatedV3(key string, doc []byte) bool {
	var m struct {
		Consolidated *struct {
			Metadata map[string]json.RawMessage `json:"metadata"`
		} `json:"consolidated_metadata"`
	}
	if json.Unmarshal(doc, &m) != nil || m.Consolidated == nil || m.Consolidated.Metadata == nil {
		return false
	}
	root := path.Dir(key)
	c.addFile(key)
	c.setComplete(root)
	for k, v := range m.Consolidated.Metadata {
		dir := path.Join(root, k)
		if !fs.ValidPath(dir) || dir == root {
			continue
		}
		c.addFile(path.Join(dir, "zarr.json"))
		if l, ok := parseLayout(v); ok {
			c.setArray(dir, l)
		}
	}
	c.completeUnder(root)
	return true
}

// completeUnder marks every directory at or below root complete:
// consolidated metadata names every metadata document below its group, and
// directories between the group and the nodes it names are implicit groups
// without documents.
func (c *catalog) completeUnder(root string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d := range c.dirs {
		if root == "." || d == root || strings.HasPrefix(d, root+"/") {
			c.complete[d] = true
		}
	}
}
