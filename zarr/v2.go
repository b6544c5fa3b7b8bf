package zarr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/codec"
)

// maxChunkLen bounds one decoded chunk. numcodecs refuses buffers of 2 GiB
// and more, so no real store has larger chunks; a bigger value is absurd
// metadata, not a chunk to allocate.
const maxChunkLen = 1<<31 - 1

// v2Array is the stored .zarray document.
type v2Array struct {
	ZarrFormat *int              `json:"zarr_format"`
	Shape      *[]int64          `json:"shape"`
	Chunks     *[]int64          `json:"chunks"`
	DType      json.RawMessage   `json:"dtype"`
	Compressor json.RawMessage   `json:"compressor"`
	Filters    []json.RawMessage `json:"filters"`
	Order      string            `json:"order"`
	Separator  *string           `json:"dimension_separator"`
	FillValue  json.RawMessage   `json:"fill_value"`
}

// ParseV2 parses a v2 .zarray document. Metadata that is malformed or
// absurd gives an error wrapping ErrInvalid. An array zfuse cannot present
// raw (object dtype, unknown or unusable codec) parses without error and has
// PassThrough set.
func ParseV2(zarray []byte) (*Array, error) {
	var m v2Array
	if err := json.Unmarshal(sanitizeJSON(zarray), &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch {
	case m.ZarrFormat == nil || *m.ZarrFormat != 2:
		return nil, fmt.Errorf("%w: zarr_format is not 2", ErrInvalid)
	case m.Shape == nil || m.Chunks == nil:
		return nil, fmt.Errorf("%w: shape and chunks are required", ErrInvalid)
	case len(*m.Shape) != len(*m.Chunks):
		return nil, fmt.Errorf("%w: shape %v and chunks %v differ in rank", ErrInvalid, *m.Shape, *m.Chunks)
	case len(*m.Shape) > 32:
		return nil, fmt.Errorf("%w: rank %d", ErrInvalid, len(*m.Shape))
	}
	a := &Array{Format: 2, Order: m.Order, Separator: ".", fillJSON: m.FillValue}
	if m.Order != "C" && m.Order != "F" {
		return nil, fmt.Errorf("%w: order %q", ErrInvalid, m.Order)
	}
	if m.Separator != nil {
		if *m.Separator != "." && *m.Separator != "/" {
			return nil, fmt.Errorf("%w: dimension_separator %q", ErrInvalid, *m.Separator)
		}
		a.Separator, a.separatorGiven = *m.Separator, true
	}
	dt, err := parseV2DType(m.DType)
	if err != nil {
		return nil, err
	}
	a.dt, a.DType, a.ItemSize = dt, dt.text, dt.Size
	a.Fill = dt.fillV2(m.FillValue)
	if err := a.setShape(*m.Shape, *m.Chunks); err != nil {
		return nil, err
	}
	a.Codecs = describeV2(m.Compressor, m.Filters)
	switch {
	case dt.notRaw != nil:
		a.PassThrough = dt.notRaw
	default:
		a.decoder, err = codec.V2(m.Compressor, m.Filters)
		if err != nil {
			a.PassThrough = err
			break
		}
		// V2 parsed it: an object, or null (a nil map).
		json.Unmarshal(m.Compressor, &a.compressor)
	}
	return a, nil
}

// setShape validates shape and chunks and fills Shape, Chunks and grid.
func (a *Array) setShape(shape, chunks []int64) error {
	a.Shape = make([]int, len(shape))
	a.Chunks = make([]int, len(shape))
	a.grid = make([]int, len(shape))
	n := int64(a.ItemSize)
	count := int64(1)
	for i := range shape {
		if shape[i] < 0 || shape[i] > 1<<53 || chunks[i] <= 0 || chunks[i] > maxChunkLen {
			return fmt.Errorf("%w: shape %v, chunks %v", ErrInvalid, shape, chunks)
		}
		a.Shape[i], a.Chunks[i] = int(shape[i]), int(chunks[i])
		a.grid[i] = int((shape[i] + chunks[i] - 1) / chunks[i])
		if n *= chunks[i]; n > maxChunkLen {
			return fmt.Errorf("%w: chunk of %v × %d bytes exceeds 2 GiB", ErrInvalid, chunks, a.ItemSize)
		}
		if g := int64(a.grid[i]); g > 0 && count > math.MaxInt64/g {
			return fmt.Errorf("%w: chunk grid %v too large", ErrInvalid, a.grid)
		} else {
			count *= g
		}
	}
	a.chunkLen, a.numChunks = n, count
	return nil
}

// describeV2 names the stored pipeline in words, e.g.
// "blosc(cname=lz4 clevel=5 shuffle=1) | delta(dtype=<i4)".
func describeV2(compressor json.RawMessage, filters []json.RawMessage) string {
	var parts []string
	if c := describeCodec(compressor); c != "" {
		parts = append(parts, c)
	}
	for i := len(filters) - 1; i >= 0; i-- {
		parts = append(parts, describeCodec(filters[i]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " | ")
}

func describeCodec(raw json.RawMessage) string {
	var c map[string]any
	if json.Unmarshal(raw, &c) != nil || c == nil {
		return ""
	}
	id, _ := c["id"].(string)
	var args []string
	for _, k := range sortedKeys(c) {
		if k == "id" || c[k] == nil {
			continue
		}
		args = append(args, fmt.Sprintf("%s=%v", k, c[k]))
	}
	return id + "(" + strings.Join(args, " ") + ")"
}

// RewriteV2Array returns the presented .zarray of a, the array zarray
// parses to (and ResolveSeparator resolves): "compressor" and "filters"
// null, "dimension_separator" a's separator unless a is Legacy (so a
// legacy nested array's .zarray names "/"), "order" and "dtype" as a says
// where a is relaid (Relayout), everything else kept. Keys are sorted and
// indented by 4, as zarr-python writes them.
func RewriteV2Array(zarray []byte, a *Array) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sanitizeJSON(zarray), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: .zarray is not a JSON object", ErrInvalid)
	}
	rewriteV2(m, a)
	return marshal(m)
}

func rewriteV2(m map[string]json.RawMessage, a *Array) {
	m["compressor"] = json.RawMessage("null")
	m["filters"] = json.RawMessage("null")
	if a.relaid { // layout.go
		m["order"] = json.RawMessage(`"C"`)
		if !a.dt.structured {
			m["dtype"], _ = jsonCompact(a.DType)
		}
	}
	if !a.Legacy() {
		m["dimension_separator"], _ = jsonCompact(a.Separator)
	}
}

// marshal writes a JSON object with sorted keys, indented by 4 spaces.
func marshal(m map[string]json.RawMessage) ([]byte, error) {
	return jsonIndent(m, "    ")
}

// sanitizeJSON quotes the bare NaN, Infinity and -Infinity tokens that some
// non-Python writers put in fill_value, so encoding/json can read them as
// zarr's "NaN"/"Infinity"/"-Infinity" strings. Text inside strings is left
// alone. Valid JSON is returned unchanged (and not copied).
func sanitizeJSON(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	var out []byte
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(b) {
					i++
					out = append(out, b[i])
				}
			case '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			out = append(out, c)
			continue
		}
		matched := false
		for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(b[i:], []byte(tok)) {
				out = append(out, strconv.Quote(tok)...)
				i += len(tok) - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out
}
