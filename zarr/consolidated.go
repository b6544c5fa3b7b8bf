package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Consolidated metadata (a v2 .zmetadata, a v3 group's inline
// consolidated_metadata) holds a copy of the metadata documents below its
// directory, and consolidated readers (xarray, zarr.open_consolidated) read
// those copies instead of the documents. So every entry must describe the
// bytes the directory it names serves, as that directory's own documents
// do: the rewrites below take a Presenter, the presenting tree's answer
// for each directory, rather than what the entry alone would suggest (an
// array whose own .zarray is invalid is passed through, its chunks served
// as stored, however valid its entry).

// A Presenter says how the presenting tree serves the directory dir, a
// path relative to the consolidated document's directory ("." for that
// directory): the array whose chunks it serves decoded, as the tree
// parsed it from the directory's own metadata (a v3 array under --as-v2:
// its v2 view), or nil when it serves no such array there (an array
// passed through or not shown, a group, nothing).
type Presenter func(dir string) *Array

// self is what p says of its own directory; nil for a nil p.
func (p Presenter) self() *Array {
	if p == nil {
		return nil
	}
	return p(".")
}

// under is the Presenter of the directory dir below p's, for the
// consolidated metadata of a group nested there; nil stays nil.
func (p Presenter) under(dir string) Presenter {
	if p == nil {
		return nil
	}
	return func(sub string) *Array { return p(path.Join(dir, sub)) }
}

// ConsolidatedArrays returns the directories of the arrays whose metadata
// the consolidated metadata in doc holds, relative to doc's directory
// ("." for it), sorted: doc is a v2 .zmetadata or a v3 group's zarr.json
// (of a nested group's, too). Entries that are not valid paths below doc's
// directory are left out; a document that does not parse gives none.
func ConsolidatedArrays(doc []byte) []string {
	var dirs []string
	if entries, err := v2Entries(doc); err == nil {
		for key := range entries {
			if dir, ok := strings.CutSuffix(key, "/"+ArrayFile); ok && fs.ValidPath(dir) {
				dirs = append(dirs, dir)
			} else if key == ArrayFile {
				dirs = append(dirs, ".")
			}
		}
	} else if _, g, err := ParseV3(doc); err == nil && g != nil {
		for key, v := range g.Consolidated {
			if !fs.ValidPath(key) || key == "." {
				continue
			}
			if isArrayDoc(v) {
				dirs = append(dirs, key)
			}
			for _, sub := range ConsolidatedArrays(v) {
				dirs = append(dirs, path.Join(key, sub))
			}
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// ConsolidatedEntries returns the entries of the consolidated metadata in
// doc, a v2 .zmetadata or a v3 group's zarr.json: each copy of a metadata
// document by its key relative to doc's directory (".zgroup",
// "sub/arr/.zarray"), or each copy of a zarr.json by its node's directory
// relative to doc's ("sub/arr"), flattened across depths; v3 says which.
// Keys are as stored (callers check them with fs.ValidPath). ok is false
// where doc holds no consolidated metadata. The values are shared with
// doc: callers must not modify them.
func ConsolidatedEntries(doc []byte) (entries map[string]json.RawMessage, v3, ok bool) {
	if e, err := v2Entries(doc); err == nil {
		return e, false, true
	}
	if _, g, err := ParseV3(doc); err == nil && g != nil && g.Consolidated != nil {
		return g.Consolidated, true, true
	}
	return nil, false, false
}

// PatchConsolidated returns the consolidated metadata doc (a v2 .zmetadata
// or a v3 group's zarr.json) with the copy of each array document in
// docs, by the array's directory relative to doc's ("." for doc's own, in
// a .zmetadata), replaced by that document (a .zarray, a zarr.json): where
// an array's own document says otherwise than its copy, consolidated
// metadata presented with it describes what the array's directory serves.
// Directories doc holds no copy for are left out. The result is for
// RewriteV2Consolidated, RewriteV3 or V2Files, which lay it out.
func PatchConsolidated(doc []byte, docs map[string]json.RawMessage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(sanitizeJSON(doc), &top); err != nil || top == nil {
		return nil, fmt.Errorf("%w: consolidated metadata is not a JSON object", ErrInvalid)
	}
	outer, field := top, "metadata" // .zmetadata
	var cm map[string]json.RawMessage
	if _, err := v2Entries(doc); err != nil { // a zarr.json
		if err := json.Unmarshal(top["consolidated_metadata"], &cm); err != nil || cm == nil {
			return nil, fmt.Errorf("%w: no consolidated metadata", ErrInvalid)
		}
		outer = cm
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(outer[field], &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%w: no consolidated metadata", ErrInvalid)
	}
	for dir, d := range docs {
		key := dir
		if cm == nil && dir == "." {
			key = ArrayFile
		} else if cm == nil {
			key = dir + "/" + ArrayFile
		}
		if _, ok := entries[key]; ok {
			entries[key] = d
		}
	}
	var err error
	if outer[field], err = json.Marshal(entries); err != nil {
		return nil, err
	}
	if cm != nil {
		if top["consolidated_metadata"], err = json.Marshal(cm); err != nil {
			return nil, err
		}
	}
	return json.Marshal(top)
}

// isArrayDoc reports whether the zarr.json doc describes an array.
func isArrayDoc(doc []byte) bool {
	var m struct {
		NodeType string `json:"node_type"`
	}
	return json.Unmarshal(doc, &m) == nil && m.NodeType == "array"
}

// v2Entries returns the "metadata" object of a .zmetadata document.
func v2Entries(zmetadata []byte) (map[string]json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(sanitizeJSON(zmetadata), &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("%w: .zmetadata is not a JSON object", ErrInvalid)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(doc["metadata"], &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%w: .zmetadata has no \"metadata\" object", ErrInvalid)
	}
	return entries, nil
}

// RewriteV2Consolidated rewrites the .zarray entries of a .zmetadata
// document as present says the tree serves each array's directory: the
// entry of an array presented raw is rewritten as RewriteV2Array rewrites
// its .zarray (with the separator the tree resolved), so consolidated
// readers see the same metadata; the entry of anything else (an array
// passed through: its chunks are served as stored) is kept as stored. With
// a nil present, each entry is rewritten as its own parse says. Keys are
// sorted and indented by 4.
func RewriteV2Consolidated(zmetadata []byte, present Presenter) ([]byte, error) {
	var doc map[string]json.RawMessage
	json.Unmarshal(sanitizeJSON(zmetadata), &doc)
	entries, err := v2Entries(zmetadata)
	if err != nil {
		return nil, err
	}
	for key, v := range entries {
		dir, ok := strings.CutSuffix(key, "/"+ArrayFile)
		switch {
		case key == ArrayFile:
			dir = "."
		case !ok:
			continue
		}
		var a *Array
		if present != nil {
			a = present(dir)
		} else if p, err := ParseV2(v); err == nil && p.PassThrough == nil {
			a = p
		}
		var m map[string]json.RawMessage
		if a == nil || a.Format != 2 || json.Unmarshal(v, &m) != nil || m == nil {
			continue
		}
		rewriteV2(m, a)
		if entries[key], err = jsonCompact(m); err != nil {
			return nil, err
		}
	}
	b, err := jsonCompact(entries)
	if err != nil {
		return nil, err
	}
	doc["metadata"] = b
	return marshal(doc)
}

// RewriteV3 returns the presented zarr.json. For an array: codecs become one
// bytes codec in the stored byte order (in the byte order of the array
// present gives for ".", where it gives one: a relaid array's), and a
// sharded array's chunk_grid
// becomes the inner chunk shape; everything else is kept. For a group:
// each entry of inline consolidated metadata as present says the tree
// serves its directory: an array presented raw is rewritten as its own
// zarr.json is, an array presented through its .zarray beside zarr.json
// (a v2 array) as PresentBeside rewrites that zarr.json (left out where
// that zarr.json is hidden), anything else kept as stored. With a nil
// present, each entry is rewritten as its own parse says. Arrays that are
// passed through are kept as stored. Keys are sorted and indented by 2.
func RewriteV3(zarrJSON []byte, present Presenter) ([]byte, error) {
	m, err := rewriteNode(zarrJSON, present)
	if err != nil {
		return nil, err
	}
	return jsonIndent(m, "  ")
}

func rewriteNode(doc []byte, present Presenter) (map[string]json.RawMessage, error) {
	m, err := parseV3Doc(doc)
	if err != nil {
		return nil, err
	}
	a, g, err := ParseV3(doc)
	if err != nil {
		return nil, err
	}
	if a != nil {
		if p := present.self(); p != nil && p.Format == 3 {
			a = p // as the tree presents it: relaid, perhaps (Relayout)
		}
		if a.PassThrough == nil {
			m["codecs"] = a.presentedCodecs()
			m["chunk_grid"], _ = jsonCompact(map[string]any{
				"name": "regular", "configuration": map[string]any{"chunk_shape": a.Chunks}})
		}
		return m, nil
	}
	if g.Consolidated == nil {
		return m, nil
	}
	var cm map[string]json.RawMessage
	json.Unmarshal(m["consolidated_metadata"], &cm)
	entries := make(map[string]json.RawMessage, len(g.Consolidated))
	for k, v := range g.Consolidated {
		b, keep := presentEntry(k, v, present)
		if keep {
			entries[k] = b
		}
	}
	cm["metadata"], _ = jsonCompact(entries)
	m["consolidated_metadata"], _ = jsonCompact(cm)
	return m, nil
}

// presentEntry returns the consolidated entry v, for the directory k, as
// RewriteV3 presents it, and false when it is left out.
func presentEntry(k string, v json.RawMessage, present Presenter) (json.RawMessage, bool) {
	if isArrayDoc(v) && present != nil {
		switch a := present(k); {
		case a == nil:
			return v, true // served as stored
		case a.Format == 2: // the directory serves its .zarray's view
			r, err := PresentBeside(v, a)
			var b bytes.Buffer
			if err != nil || json.Compact(&b, r) != nil {
				return nil, false
			}
			return b.Bytes(), true
		}
	}
	r, err := rewriteNode(v, present.under(k))
	if err != nil {
		return v, true
	}
	b, _ := jsonCompact(r)
	return b, true
}
