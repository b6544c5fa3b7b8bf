package zarr

import (
	"bytes"
	"encoding/json"
)

// jsonIndent encodes v as JSON indented by indent, without encoding/json's
// HTML escaping, so a dtype reads "<f4" and not "\u003cf4" (zarr-python
// reads both, people read one).
func jsonIndent(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", indent)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonCompact is jsonIndent without indentation.
func jsonCompact(v any) ([]byte, error) { return jsonIndent(v, "") }
