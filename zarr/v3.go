package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zfuse/zfuse/codec"
)

// MetadataFile is the Zarr v3 metadata document of every array and group.
const MetadataFile = "zarr.json"

// A Group is a v3 group's metadata.
type Group struct {
	Attributes json.RawMessage // the attributes object, "{}" when absent
	// Consolidated holds the inline consolidated metadata (zarr-python 3's
	// convention): zarr.json documents keyed by path relative to the group,
	// flattened across depths. nil when absent or null.
	Consolidated map[string]json.RawMessage
}

// v3Keys are the top-level keys of zarr.json that zfuse understands.
var v3Keys = map[string]bool{
	"zarr_format": true, "node_type": true, "shape": true, "data_type": true, "chunk_grid": true,
	"chunk_key_encoding": true, "fill_value": true, "codecs": true, "attributes": true,
	"storage_transformers": true, "dimension_names": true, "consolidated_metadata": true,
}

// ParseV3 parses a v3 zarr.json document: an array (the *Array is set) or
// a group (the *Group is set). Malformed or absurd metadata gives an error
// wrapping ErrInvalid. An array zfuse cannot present raw (variable-length
// data types, codecs it cannot decode, unknown extensions that must be
// understood) parses without error and has PassThrough set.
//
// The presented array has Format 3, chunk keys in the stored chunk key
// encoding, and chunks in C order of the logical chunk shape in the byte
// order of the bytes codec (Endian): transposes are undone, nothing is
// byte-swapped. A sharded array is presented unsharded (see Shard).
func ParseV3(zarrJSON []byte) (*Array, *Group, error) {
	m, err := parseV3Doc(zarrJSON)
	if err != nil {
		return nil, nil, err
	}
	var node string
	if err := json.Unmarshal(m["node_type"], &node); err != nil {
		return nil, nil, fmt.Errorf("%w: node_type: %v", ErrInvalid, err)
	}
	switch node {
	case "group":
		g, err := parseGroup(m)
		return nil, g, err
	case "array":
		a, err := parseArray(m)
		return a, nil, err
	}
	return nil, nil, fmt.Errorf("%w: node_type %q", ErrInvalid, node)
}

func parseV3Doc(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sanitizeJSON(b), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: zarr.json is not a JSON object", ErrInvalid)
	}
	var f int
	if err := json.Unmarshal(m["zarr_format"], &f); err != nil || f != 3 {
		return nil, fmt.Errorf("%w: zarr_format is not 3", ErrInvalid)
	}
	return m, nil
}

func parseGroup(m map[string]json.RawMessage) (*Group, error) {
	g := &Group{Attributes: json.RawMessage("{}")}
	if a, ok := m["attributes"]; ok && !isNull(a) {
		var o map[string]json.RawMessage
		if err := json.Unmarshal(a, &o); err != nil {
			return nil, fmt.Errorf("%w: attributes is not an object", ErrInvalid)
		}
		g.Attributes = a
	}
	if c, ok := m["consolidated_metadata"]; ok && !isNull(c) {
		var cm struct {
			Kind     string                     `json:"kind"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(c, &cm); err != nil || (cm.Kind != "" && cm.Kind != "inline") {
			return nil, fmt.Errorf("%w: consolidated_metadata: %s", ErrInvalid, c)
		}
		g.Consolidated = cm.Metadata
		if g.Consolidated == nil {
			g.Consolidated = map[string]json.RawMessage{}
		}
	}
	return g, nil
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// parseArray parses the zarr.json of an array. An array it cannot present
// raw is returned with PassThrough set to the first reason found.
func parseArray(m map[string]json.RawMessage) (*Array, error) {
	var shape []int64
	if err := json.Unmarshal(m["shape"], &shape); err != nil || m["shape"] == nil || isNull(m["shape"]) {
		return nil, fmt.Errorf("%w: shape is required", ErrInvalid)
	}
	if len(shape) > 32 {
		return nil, fmt.Errorf("%w: rank %d", ErrInvalid, len(shape))
	}
	a := &Array{Format: 3, Order: "C", separatorGiven: true, attrs: json.RawMessage("{}")}
	var pass error // the first reason to pass the array through
	passIf := func(err error) {
		if pass == nil {
			pass = err
		}
	}
	passIf(unknownExtensions(m))

	dt, err := parseDataType(m["data_type"])
	if err != nil {
		return nil, err
	}
	a.DataType, a.ItemSize = dt.text, dt.Size
	passIf(dt.notRaw)

	chunks, why, err := parseChunkGrid(m["chunk_grid"], shape)
	if err != nil {
		return nil, err
	}
	passIf(why)
	if why, err = a.parseKeyEncoding(m["chunk_key_encoding"]); err != nil {
		return nil, err
	}
	passIf(why)
	if why, err = a.parseOptional(m, len(shape)); err != nil {
		return nil, err
	}
	passIf(why)

	// codecs and fill_value
	var list []json.RawMessage
	if err := json.Unmarshal(m["codecs"], &list); err != nil || len(list) == 0 {
		return nil, fmt.Errorf("%w: codecs must be a non-empty list", ErrInvalid)
	}
	endian, err := findEndian(list, 0)
	if err != nil {
		return nil, err
	}
	dt.Big = endian == "big" && dt.Ordered()
	a.dt, a.Endian = dt, dt.endian()
	a.DType = dt.typestr()
	if a.DType == "" {
		a.DType = dt.text
	}
	a.fillJSON = m["fill_value"]
	if a.Fill, err = dt.fill(m["fill_value"]); err != nil {
		return nil, err
	}
	return a.derive(shape, chunks, list, endian, pass)
}

// unknownExtensions returns why an array with a top-level key zarr.json
// does not define, unless it says must_understand: false, passes through.
func unknownExtensions(m map[string]json.RawMessage) error {
	for k, v := range m {
		if v3Keys[k] {
			continue
		}
		var e struct {
			MustUnderstand *bool `json:"must_understand"`
		}
		if json.Unmarshal(v, &e) != nil || e.MustUnderstand == nil || *e.MustUnderstand {
			return fmt.Errorf("%w: extension %q must be understood", codec.ErrUnknownCodec, k)
		}
	}
	return nil
}

// parseChunkGrid returns the chunk shape of a regular chunk_grid, or nil
// and why the array passes through for any other grid.
func parseChunkGrid(raw json.RawMessage, shape []int64) (chunks []int64, pass, err error) {
	grid, err := parseExtension(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("chunk_grid: %w", err)
	}
	if grid.Name != "regular" {
		return nil, fmt.Errorf("%w: chunk grid %q", codec.ErrUnknownCodec, grid.Name), nil
	}
	var c struct {
		ChunkShape []int64 `json:"chunk_shape"`
	}
	if err := json.Unmarshal(grid.Config, &c); err != nil || len(c.ChunkShape) != len(shape) {
		return nil, nil, fmt.Errorf("%w: chunk_shape %s for shape %v", ErrInvalid, grid.Config, shape)
	}
	return c.ChunkShape, nil, nil
}

// parseKeyEncoding sets a's chunk key prefix and separator from
// chunk_key_encoding, or returns why the array passes through.
func (a *Array) parseKeyEncoding(raw json.RawMessage) (pass, err error) {
	cke, err := parseExtension(raw)
	if err != nil {
		return nil, fmt.Errorf("chunk_key_encoding: %w", err)
	}
	c := codec.Config{}
	json.Unmarshal(cke.Config, &c)
	switch cke.Name {
	case "default":
		a.keyPrefix, a.Separator = "c", "/"
	case "v2":
		a.Separator = "."
	default:
		pass = fmt.Errorf("%w: chunk key encoding %q", codec.ErrUnknownCodec, cke.Name)
	}
	if a.Separator != "" {
		if a.Separator, err = c.String("separator", a.Separator); err != nil || (a.Separator != "." && a.Separator != "/") {
			return nil, fmt.Errorf("%w: chunk key separator %s", ErrInvalid, c["separator"])
		}
	}
	a.storedPrefix = a.keyPrefix
	return pass, nil
}

// parseOptional checks and keeps attributes and dimension_names, and
// returns why the array passes through if a storage transformer is
// required.
func (a *Array) parseOptional(m map[string]json.RawMessage, rank int) (pass, err error) {
	if v, ok := m["attributes"]; ok && !isNull(v) {
		var o map[string]json.RawMessage
		if err := json.Unmarshal(v, &o); err != nil {
			return nil, fmt.Errorf("%w: attributes is not an object", ErrInvalid)
		}
		a.attrs = v
	}
	if v, ok := m["dimension_names"]; ok && !isNull(v) {
		var names []*string
		if err := json.Unmarshal(v, &names); err != nil || len(names) != rank {
			return nil, fmt.Errorf("%w: dimension_names %s for rank %d", ErrInvalid, v, rank)
		}
		a.dimNames = v
	}
	if v, ok := m["storage_transformers"]; ok && !isNull(v) {
		var ts []json.RawMessage
		if err := json.Unmarshal(v, &ts); err != nil {
			return nil, fmt.Errorf("%w: storage_transformers is not a list", ErrInvalid)
		}
		for _, t := range ts {
			e, err := parseExtension(t)
			if err != nil {
				return nil, fmt.Errorf("storage_transformers: %w", err)
			}
			if !e.Optional && pass == nil {
				pass = fmt.Errorf("%w: storage transformer %q", codec.ErrUnknownCodec, e.Name)
			}
		}
	}
	return pass, nil
}

// derive sets what follows from the parsed metadata: the shape, and the
// decoder and presented chunks, unless the array passes through (pass).
func (a *Array) derive(shape, chunks []int64, list []json.RawMessage, endian string, pass error) (*Array, error) {
	if chunks == nil { // no regular grid: nothing more to derive
		a.Shape = make([]int, len(shape))
		for i, s := range shape {
			a.Shape[i] = int(max(s, 0))
		}
		a.PassThrough = pass
		return a, nil
	}
	if err := a.setShape(shape, chunks); err != nil && pass == nil {
		return nil, err
	}
	if pass != nil {
		a.PassThrough = pass
		a.Codecs = describeList(list)
		return a, nil
	}
	p, err := buildPipe(list, a.Chunks, a.ItemSize, a.Fill, endian, 0)
	if errors.Is(err, ErrInvalid) {
		return nil, err
	}
	if err != nil {
		a.PassThrough = err
		a.Codecs = describeList(list)
		return a, nil
	}
	a.Codecs = p.desc
	if p.shard == nil || !p.unperm {
		a.decoder = p.dec // a shard after other array→array codecs is decoded whole
		a.compressor = p.first
		return a, nil
	}
	return a, a.presentUnsharded(p, shape)
}

// presentUnsharded makes the inner chunks of a sharded array its presented
// chunks.
func (a *Array) presentUnsharded(p *pipe, shape []int64) error {
	s := p.shard
	rank := len(a.Chunks)
	presented := make([]int64, rank)
	a.shardPer = make([]int, rank)
	if p.perm != nil && !isIdentity(p.perm) {
		a.perm = p.perm
	}
	for i := range rank {
		ax := i
		if a.perm != nil {
			ax = a.perm[i]
		}
		presented[ax] = int64(s.inner[i])
		a.shardPer[ax] = s.cps[i]
	}
	a.storedGrid, a.shardShape = a.grid, a.Chunks
	a.shard, a.unwrap = s, p.outer
	if err := a.setShape(shape, presented); err != nil {
		return err
	}
	a.decoder, a.compressor = s.dec, s.first
	if a.perm != nil {
		t, err := codec.NewTranspose(a.Chunks, a.perm, a.ItemSize)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		a.decoder = codec.Chain(s.dec, t)
	}
	return nil
}

// describeList names a codec list that will not be decoded, as written.
func describeList(list []json.RawMessage) string {
	var b bytes.Buffer
	for i, raw := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		e, err := parseExtension(raw)
		if err != nil {
			b.WriteString("?")
			continue
		}
		b.WriteString(e.Name)
	}
	return b.String()
}

// presentedCodecs is the codec list of the presented zarr.json: one bytes
// codec in the stored byte order.
func (a *Array) presentedCodecs() json.RawMessage {
	if a.Endian == "" {
		return json.RawMessage(`[{"name":"bytes"}]`)
	}
	return json.RawMessage(`[{"name":"bytes","configuration":{"endian":"` + a.Endian + `"}}]`)
}
