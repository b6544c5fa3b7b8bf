package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestInfoBeside: zfuse info says what a directory holding both .zarray
// and zarr.json serves of zarr.json (FORMAT v2+v3), and cat serves it
// rewritten or not at all, as the mount does.
func TestInfoBeside(t *testing.T) {
	src := t.TempDir()
	write := storeWriter(t, src)
	zarray := `{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|u1", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`
	zarrJSON := func(fill string) string {
		return `{"zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "uint8",
			"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
			"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}, "fill_value": ` + fill + `, "codecs": ["bytes"]}`
	}
	for _, dir := range []string{"agree", "disagree"} {
		write(dir+"/.zarray", zarray)
		write(dir+"/0", "\x01\x02")
	}
	write("agree/zarr.json", zarrJSON("0"))
	write("disagree/zarr.json", zarrJSON("9"))
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"info", src}, &stdout, &stderr); err != nil {
		t.Fatal(err, stderr.String())
	}
	lines := map[string]string{}
	for l := range strings.Lines(stdout.String()) {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = strings.Join(f, " ")
		}
	}
	for dir, want := range map[string]string{
		"agree":    "agree v2+v3 3 2 - |u1 none none: stored uncompressed 1 chunks, 2 B 1.00 raw; zarr.json rewritten too",
		"disagree": "disagree v2+v3 3 2 - |u1 none none: stored uncompressed 1 chunks, 2 B 1.00 raw; zarr.json hidden: zarr: zarr.json does not describe the chunks .zarray does: fill_value 9, .zarray 0",
	} {
		if lines[dir] != want {
			t.Errorf("zfuse info: %q\nwant %q", lines[dir], want)
		}
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"cat", src, "agree/zarr.json"}, &stdout, &stderr); err != nil ||
		!strings.Contains(stdout.String(), `"codecs": [`) || !strings.Contains(stdout.String(), `"name": "bytes"`) {
		t.Errorf("zfuse cat agree/zarr.json: %v %s", err, stdout.String())
	}
	if err := run(context.Background(), []string{"cat", src, "disagree/zarr.json"}, &stdout, &stderr); err == nil ||
		!strings.Contains(err.Error(), "no such file") {
		t.Errorf("zfuse cat disagree/zarr.json: %v, want no such file", err)
	}
}
