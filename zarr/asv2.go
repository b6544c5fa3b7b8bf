package zarr

import (
	"encoding/json"
	"fmt"
	"path"

	"github.com/zfuse/zfuse/codec"
)

// AsV2 returns the array as the --as-v2 view presents it: the same chunks,
// decoder and sharding, but Format 2, DType the numpy typestr in the stored
// byte order, and chunk keys in v2 form ("0.0" or "0/0", by the separator
// of the stored chunk key encoding; "0" for a 0-d array). StoredKey still
// names the stored v3 keys. Arrays with no v2 equivalent (variable-length or
// unknown data types) give an error wrapping codec.ErrNotRaw that names the
// type; arrays passed through give their PassThrough error.
func (a *Array) AsV2() (*Array, error) {
	if a.Format != 3 {
		return nil, fmt.Errorf("%w: AsV2 of a v%d array", ErrInvalid, a.Format)
	}
	if a.dt.typestr() == "" {
		return nil, fmt.Errorf("%w: data type %s has no Zarr v2 equivalent", codec.ErrNotRaw, a.DataType)
	}
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	v := *a
	v.Format, v.keyPrefix = 2, ""
	return &v, nil
}

// v2Zarray is the presented .zarray of an --as-v2 view.
func (a *Array) v2Zarray() ([]byte, error) {
	m := map[string]any{
		"zarr_format":         2,
		"shape":               a.Shape,
		"chunks":              a.Chunks,
		"dtype":               a.DType,
		"fill_value":          a.dt.v2Fill(a.fillJSON, a.Fill),
		"order":               "C",
		"compressor":          nil,
		"filters":             nil,
		"dimension_separator": a.Separator,
	}
	return jsonIndent(m, "    ")
}

// v2Attrs is the presented .zattrs: the attributes, plus xarray's
// "_ARRAY_DIMENSIONS" from dimension_names when every dimension is named
// and the attributes do not already say.
func v2Attrs(attrs, dimNames json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(attrs, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	if _, ok := m["_ARRAY_DIMENSIONS"]; !ok && dimNames != nil {
		var names []*string
		json.Unmarshal(dimNames, &names)
		named := len(names) > 0
		for _, n := range names {
			named = named && n != nil
		}
		if named {
			m["_ARRAY_DIMENSIONS"] = dimNames
		}
	}
	return jsonIndent(m, "    ")
}

// v2GroupDoc is the .zgroup zfuse writes, as zarr-python 2 writes it.
const v2GroupDoc = "{\n    \"zarr_format\": 2\n}"

// v2Files are the .zarray and .zattrs of v3 array a's v2 view (AsV2).
func (a *Array) v2Files() (map[string][]byte, error) {
	v := a
	if a.Format == 3 {
		var err error
		if v, err = a.AsV2(); err != nil {
			return nil, err
		}
	}
	za, err := v.v2Zarray()
	if err != nil {
		return nil, err
	}
	at, err := v2Attrs(a.attrs, a.dimNames)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{ArrayFile: za, AttrsFile: at}, nil
}

// zmetadata is the .zmetadata document holding meta, metadata documents
// by path, as zarr.consolidate_metadata writes it.
func zmetadata(meta map[string]json.RawMessage) ([]byte, error) {
	return jsonIndent(map[string]any{"zarr_consolidated_format": 1, "metadata": meta}, "    ")
}

// V2Files returns the Zarr v2 metadata files that stand for one v3
// zarr.json under --as-v2, by file name: ".zarray" and ".zattrs" for an
// array; ".zgroup", ".zattrs" and, when the group holds inline consolidated
// metadata, ".zmetadata", whose arrays are those present says the tree
// shows (with a nil present, those that have a v2 view). An array with no
// v2 view gives AsV2's error: the caller reports and skips it.
func V2Files(zarrJSON []byte, present Presenter) (map[string][]byte, error) {
	a, g, err := ParseV3(zarrJSON)
	if err != nil {
		return nil, err
	}
	if a != nil {
		if p := present.self(); p != nil && p.Format == 2 {
			return p.v2Files() // relaid, perhaps (Relayout)
		}
		return a.v2Files()
	}
	files := map[string][]byte{GroupFile: []byte(v2GroupDoc)}
	if files[AttrsFile], err = v2Attrs(g.Attributes, nil); err != nil {
		return nil, err
	}
	if g.Consolidated == nil {
		return files, nil
	}
	meta := map[string]json.RawMessage{}
	add := func(prefix string, fs map[string][]byte) {
		for name, b := range fs {
			if name == ConsolidatedFile {
				continue
			}
			var c json.RawMessage
			if json.Unmarshal(b, &c) == nil {
				meta[path.Join(prefix, name)] = c
			}
		}
	}
	add("", files)
	for p, doc := range g.Consolidated {
		if isArrayDoc(doc) && present != nil && present(p) == nil {
			continue // not shown
		}
		if fs, err := V2Files(doc, present.under(p)); err == nil {
			add(p, fs)
		}
	}
	zm, err := zmetadata(meta)
	if err != nil {
		return nil, err
	}
	files[ConsolidatedFile] = zm
	return files, nil
}
