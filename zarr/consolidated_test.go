package zarr

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestConsolidatedArrays(t *testing.T) {
	arr := string(v3Doc(nil))
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"v2", `{"zarr_consolidated_format": 1, "metadata": {".zgroup": {}, ".zarray": {}, "x/.zarray": {}, "g/y/.zarray": {}, "g/.zattrs": {}, "../z/.zarray": {}}}`,
			[]string{".", "g/y", "x"}},
		{"v3", `{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline", "metadata": {
			"a": ` + arr + `, "g": {"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"metadata": {"c": ` + arr + `}}},
			"g/b": ` + arr + `, "..": ` + arr + `}}}`, []string{"a", "g/b", "g/c"}},
		{"not consolidated", `{"zarr_format": 3, "node_type": "group"}`, nil},
		{"not JSON", `{`, nil},
	}
	for _, tt := range tests {
		if got := ConsolidatedArrays([]byte(tt.doc)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestRewriteV3Presenter: a group's consolidated entries follow what the
// tree presents in each directory: raw (rewritten), served as stored
// (kept), a v2 view of a directory holding both documents (as
// PresentBeside has it, or left out where that zarr.json is hidden).
func TestRewriteV3Presenter(t *testing.T) {
	v2keys := `{"name":"v2","configuration":{"separator":"."}}`
	beside := v3Doc(map[string]string{"chunk_key_encoding": v2keys})
	other := v3Doc(map[string]string{"chunk_key_encoding": v2keys, "shape": `[11]`})
	v2, err := ParseV2([]byte(`{"zarr_format":2,"shape":[10],"chunks":[4],"dtype":"<i2","compressor":{"id":"zstd","level":0},"fill_value":0,"order":"C","filters":null}`))
	if err != nil {
		t.Fatal(err)
	}
	plain := v3Doc(nil)
	raw, _, _ := ParseV3(plain)
	group := `{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": {
		"raw": ` + string(plain) + `, "stored": ` + string(plain) + `, "beside": ` + string(beside) + `, "other": ` + string(other) + `}}}`
	present := func(dir string) *Array {
		return map[string]*Array{"raw": raw, "beside": v2, "other": v2}[dir]
	}
	out, err := RewriteV3([]byte(group), present)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Consolidated struct {
			Metadata map[string]struct {
				Codecs json.RawMessage `json:"codecs"`
			} `json:"metadata"`
		} `json:"consolidated_metadata"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Consolidated.Metadata
	want := map[string]string{
		"raw":    `[{"name":"bytes","configuration":{"endian":"little"}}]`,
		"stored": `[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":0,"checksum":false}}]`,
		"beside": `[{"name":"bytes","configuration":{"endian":"little"}}]`,
	}
	for k, w := range want {
		if got := compactJSON(t, m[k].Codecs); got != w {
			t.Errorf("%s: codecs %s, want %s", k, got, w)
		}
	}
	if _, ok := m["other"]; ok {
		t.Errorf("other, whose zarr.json does not describe the .zarray's chunks, is in the consolidated metadata")
	}
}

func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	v, err := jsonCompact(json.RawMessage(b))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return string(v)
}
