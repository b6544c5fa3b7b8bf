package zarr

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"

	"github.com/zfuse/zfuse/codec"
)

// A Target says how an array is to be stored (zfuse compress): in which
// format, in which chunks, with which codecs.
type Target struct {
	Format int   // 2 or 3
	Chunks []int // the chunk shape (of a sharded array, the inner chunk shape)
	// Shard, for Format 3, is the number of chunks per shard along each
	// axis; nil stores every chunk on its own.
	Shard []int
	// Compressor is a numcodecs configuration ({"id": "blosc", ...}); nil
	// stores chunks uncompressed. In v3 it becomes the matching v3 codec
	// ("blosc", "zstd", "gzip", "crc32c") or "numcodecs.<id>".
	Compressor codec.Config
	// Filters are numcodecs filters ("delta", "shuffle"), applied in order
	// before the compressor.
	Filters []codec.Config
}

// StoreArray returns the metadata files of an array stored as t: ".zarray"
// and ".zattrs" for v2, "zarr.json" for v3. src holds the array's stored
// metadata files (".zarray" and, if present, ".zattrs"; or "zarr.json"),
// and a is the array as parsed from them and presented (a legacy array as
// ResolveSeparator returns it). Shape, data type, byte order, fill value,
// attributes and dimension names carry over; between formats, v2's
// "_ARRAY_DIMENSIONS" attribute and v3's dimension_names stand for each
// other, and a v2 array in F order becomes C order in v3 (its chunks must
// be rearranged; Array.Order says so). The result parses (ParseV2,
// ParseV3) into the array as the store will present it.
func StoreArray(src map[string][]byte, a *Array, t Target) (map[string][]byte, error) {
	if a.PassThrough != nil {
		return nil, a.PassThrough
	}
	if len(t.Chunks) != len(a.Shape) || (t.Shard != nil && len(t.Shard) != len(a.Shape)) {
		return nil, fmt.Errorf("%w: chunks %v, shard %v for an array of rank %d", ErrInvalid, t.Chunks, t.Shard, len(a.Shape))
	}
	switch {
	case t.Format == 2 && t.Shard != nil:
		return nil, fmt.Errorf("%w: Zarr v2 has no sharding", ErrInvalid)
	case t.Format == 2:
		return storeV2(src, a, t)
	case t.Format == 3:
		return storeV3(src, a, t)
	}
	return nil, fmt.Errorf("%w: zarr_format %d", ErrInvalid, t.Format)
}

func storeV2(src map[string][]byte, a *Array, t Target) (map[string][]byte, error) {
	var m map[string]json.RawMessage
	attrs := src[AttrsFile]
	switch {
	case src[ArrayFile] != nil:
		if err := json.Unmarshal(sanitizeJSON(src[ArrayFile]), &m); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, ArrayFile, err)
		}
	case a.Format == 3:
		f, err := a.v2Files()
		if err != nil {
			return nil, err
		}
		json.Unmarshal(f[ArrayFile], &m)
		attrs = f[AttrsFile]
	default:
		return nil, fmt.Errorf("%w: no %s", ErrInvalid, ArrayFile)
	}
	m["chunks"], _ = jsonCompact(t.Chunks)
	m["dimension_separator"], _ = jsonCompact(a.Separator)
	m["compressor"] = json.RawMessage("null")
	if t.Compressor != nil {
		m["compressor"], _ = jsonCompact(t.Compressor)
	}
	m["filters"] = json.RawMessage("null")
	if len(t.Filters) > 0 {
		m["filters"], _ = jsonCompact(t.Filters)
	}
	za, err := marshal(m)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{ArrayFile: za}
	if attrs != nil {
		files[AttrsFile] = attrs
	}
	return files, nil
}

func storeV3(src map[string][]byte, a *Array, t Target) (map[string][]byte, error) {
	var m map[string]json.RawMessage
	var err error
	if b := src[MetadataFile]; b != nil {
		if m, err = parseV3Doc(b); err != nil {
			return nil, err
		}
	} else if m, err = v3FromV2(src, a); err != nil {
		return nil, err
	}
	inner, err := v3Codecs(a, t)
	if err != nil {
		return nil, err
	}
	grid := t.Chunks
	codecs := inner
	if t.Shard != nil {
		grid = make([]int, len(t.Chunks))
		for i := range grid {
			grid[i] = t.Chunks[i] * t.Shard[i]
		}
		codecs = []any{map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
			"chunk_shape":    t.Chunks,
			"codecs":         inner,
			"index_codecs":   []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}}, map[string]any{"name": "crc32c"}},
			"index_location": "end",
		}}}
	}
	m["chunk_grid"], _ = jsonCompact(map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": grid}})
	m["codecs"], _ = jsonCompact(codecs)
	b, err := jsonIndent(m, "  ")
	if err != nil {
		return nil, err
	}
	return map[string][]byte{MetadataFile: b}, nil
}

// v3Codecs is the codec list of one (inner) chunk: numcodecs array→array
// filters, bytes in the presented byte order, numcodecs bytes→bytes
// filters, the compressor.
func v3Codecs(a *Array, t Target) ([]any, error) {
	var pre, post []any
	for _, f := range t.Filters {
		c, err := v3Codec(f, a.ItemSize)
		if err != nil {
			return nil, err
		}
		if codec.KindOfV3("numcodecs."+f.ID()) == codec.ArrayToArray {
			pre = append(pre, c)
		} else {
			post = append(post, c)
		}
	}
	bytesCodec := map[string]any{"name": "bytes"}
	if e := a.dt.endian(); e != "" {
		bytesCodec["configuration"] = map[string]any{"endian": e}
	}
	list := append(pre, bytesCodec)
	list = append(list, post...)
	if t.Compressor != nil {
		c, err := v3Codec(t.Compressor, a.ItemSize)
		if err != nil {
			return nil, err
		}
		list = append(list, c)
	}
	return list, nil
}

// v3Codec names a numcodecs configuration as Zarr v3 does: the core codecs
// blosc (shuffle spelled out, typesize from the item size), zstd, gzip and
// crc32c by their names, every other one as "numcodecs.<id>".
func v3Codec(c codec.Config, itemSize int) (any, error) {
	conf := map[string]json.RawMessage{}
	for k, v := range c {
		if k != "id" {
			conf[k] = v
		}
	}
	switch id := c.ID(); id {
	case "blosc":
		shuffle, err := c.Int("shuffle", 1)
		if err != nil {
			return nil, err
		}
		if shuffle == -1 {
			shuffle = codec.BloscByteShuffle
			if itemSize == 1 {
				shuffle = codec.BloscBitShuffle
			}
		}
		names := []string{"noshuffle", "shuffle", "bitshuffle"}
		if shuffle < 0 || shuffle >= len(names) {
			return nil, fmt.Errorf("%w: blosc shuffle %d", codec.ErrConfig, shuffle)
		}
		conf["shuffle"], _ = jsonCompact(names[shuffle])
		conf["typesize"], _ = jsonCompact(itemSize)
		if _, ok := conf["blocksize"]; !ok {
			conf["blocksize"] = json.RawMessage("0")
		}
		return map[string]any{"name": "blosc", "configuration": conf}, nil
	case "zstd":
		if _, ok := conf["checksum"]; !ok {
			conf["checksum"] = json.RawMessage("false")
		}
		return map[string]any{"name": "zstd", "configuration": conf}, nil
	case "gzip":
		return map[string]any{"name": "gzip", "configuration": conf}, nil
	case "crc32c":
		return map[string]any{"name": "crc32c"}, nil
	case "":
		return nil, fmt.Errorf("%w: codec without an id", codec.ErrConfig)
	default:
		return map[string]any{"name": "numcodecs." + id, "configuration": conf}, nil
	}
}

// v3FromV2 is the zarr.json of a v2 array with the same shape, data type,
// byte order, fill value and attributes; its chunks are in C order with
// the default chunk key encoding.
func v3FromV2(src map[string][]byte, a *Array) (map[string]json.RawMessage, error) {
	name, err := v3DataTypeName(a.dt)
	if err != nil {
		return nil, err
	}
	var z struct {
		Fill json.RawMessage `json:"fill_value"`
	}
	json.Unmarshal(sanitizeJSON(src[ArrayFile]), &z)
	fill := a.Fill
	if fill == nil {
		fill = make([]byte, a.ItemSize) // v3 has no "no fill value": zeros, as zarr-python 3 reads null
		z.Fill = nil
	}
	m := map[string]json.RawMessage{}
	m["zarr_format"] = json.RawMessage("3")
	m["node_type"], _ = jsonCompact("array")
	m["shape"], _ = jsonCompact(a.Shape)
	m["data_type"] = name
	m["chunk_key_encoding"], _ = jsonCompact(map[string]any{"name": "default", "configuration": map[string]any{"separator": "/"}})
	m["fill_value"] = a.dt.v3Fill(z.Fill, fill)
	var attrs map[string]json.RawMessage
	if b := src[AttrsFile]; b != nil {
		if err := json.Unmarshal(b, &attrs); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, AttrsFile, err)
		}
	}
	if attrs == nil {
		attrs = map[string]json.RawMessage{}
	}
	if dims, ok := attrs["_ARRAY_DIMENSIONS"]; ok {
		var names []string
		if json.Unmarshal(dims, &names) == nil && len(names) == len(a.Shape) {
			m["dimension_names"] = dims
			delete(attrs, "_ARRAY_DIMENSIONS")
		}
	}
	m["attributes"], _ = jsonCompact(attrs)
	return m, nil
}

// StoreGroup returns the metadata files of a group in format 2 (".zgroup",
// ".zattrs") or 3 ("zarr.json"), with its attributes, from its stored files
// (".zgroup" and ".zattrs", or "zarr.json"). Consolidated metadata is not
// carried: Consolidate makes it anew for what was written.
func StoreGroup(src map[string][]byte, format int) (map[string][]byte, error) {
	attrs := json.RawMessage("{}")
	if b := src[MetadataFile]; b != nil {
		_, g, err := ParseV3(b)
		if err != nil {
			return nil, err
		}
		if g == nil {
			return nil, fmt.Errorf("%w: %s is not a group", ErrInvalid, MetadataFile)
		}
		attrs = g.Attributes
	} else if b := src[AttrsFile]; b != nil {
		attrs = b
	}
	var a map[string]json.RawMessage
	if err := json.Unmarshal(attrs, &a); err != nil {
		return nil, fmt.Errorf("%w: attributes: %v", ErrInvalid, err)
	}
	if a == nil {
		a = map[string]json.RawMessage{}
	}
	switch format {
	case 2:
		za, err := marshal(a)
		if err != nil {
			return nil, err
		}
		return map[string][]byte{GroupFile: []byte(v2GroupDoc), AttrsFile: za}, nil
	case 3:
		b, err := jsonIndent(map[string]any{"zarr_format": 3, "node_type": "group", "attributes": a}, "  ")
		if err != nil {
			return nil, err
		}
		return map[string][]byte{MetadataFile: b}, nil
	}
	return nil, fmt.Errorf("%w: zarr_format %d", ErrInvalid, format)
}

// Consolidate returns the files that consolidate the metadata of a tree
// written in format 2 or 3: docs maps each node's path relative to the
// consolidating group ("" for the group itself) to its metadata files. For
// v2 that is a ".zmetadata" file (zarr.consolidate_metadata's layout); for
// v3, the group's zarr.json with inline consolidated_metadata (zarr-python
// 3's convention), which replaces the group's own.
func Consolidate(format int, docs map[string]map[string][]byte) (map[string][]byte, error) {
	switch format {
	case 2:
		meta := map[string]json.RawMessage{}
		for p, files := range docs {
			for name, b := range files {
				if name == ConsolidatedFile {
					continue
				}
				var v json.RawMessage
				if err := json.Unmarshal(b, &v); err != nil {
					return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path.Join(p, name), err)
				}
				meta[path.Join(p, name)], _ = jsonCompact(v)
			}
		}
		b, err := zmetadata(meta)
		if err != nil {
			return nil, err
		}
		return map[string][]byte{ConsolidatedFile: b}, nil
	case 3:
		root, ok := docs[""][MetadataFile]
		if !ok {
			return nil, fmt.Errorf("%w: no group %s to consolidate into", ErrInvalid, MetadataFile)
		}
		m, err := parseV3Doc(root)
		if err != nil {
			return nil, err
		}
		entries := map[string]json.RawMessage{}
		for _, p := range slices.Sorted(maps.Keys(docs)) {
			if p == "" {
				continue
			}
			b, ok := docs[p][MetadataFile]
			if !ok {
				continue
			}
			var v json.RawMessage
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path.Join(p, MetadataFile), err)
			}
			entries[p], _ = jsonCompact(v)
		}
		m["consolidated_metadata"], _ = jsonCompact(map[string]any{"kind": "inline", "must_understand": false, "metadata": entries})
		b, err := jsonIndent(m, "  ")
		if err != nil {
			return nil, err
		}
		return map[string][]byte{MetadataFile: b}, nil
	}
	return nil, fmt.Errorf("%w: zarr_format %d", ErrInvalid, format)
}
