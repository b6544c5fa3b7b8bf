package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNpy: zfuse cat and info under --as-npy: an array is one .npy
// file and a .json beside it, a root array is named after SOURCE, info
// names each array's file (or says why it is not shown), and the view
// does not combine with --as-v2.
func TestRunNpy(t *testing.T) {
	src := t.TempDir()
	write := storeWriter(t, src)
	write(".zgroup", `{"zarr_format": 2}`)
	write("a/.zarray", `{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": "|u1",
		"compressor": null, "fill_value": 9, "order": "C", "filters": null}`)
	write("a/.zattrs", `{"units": "m"}`)
	write("a/0", "\x01\x02")
	write("o/.zarray", `{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|O",
		"compressor": null, "fill_value": null, "order": "C", "filters": [{"id": "vlen-utf8"}]}`)
	root := filepath.Join(t.TempDir(), "t2m.zarr")
	storeWriter(t, root)(".zarray", `{"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i2",
		"compressor": null, "fill_value": 0, "order": "C", "filters": null}`)
	storeWriter(t, root)("0", "\x05\x00\x06\x00")
	checkRuns(t, []runCase{
		{[]string{"cat", "--as-npy", src, "a.npy"}, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", ""},
		{[]string{"cat", "--as-npy", src, "a.json"}, `{"units": "m"}`, ""},
		{[]string{"cat", "--as-npy", src, "a/0"}, "", "no such file"},
		{[]string{"cat", "--as-npy", src, ".zgroup"}, "", "no such file"},
		{[]string{"cat", "--as-npy", src, "o.npy"}, "", "no such file"},
		{[]string{"cat", "--as-npy", root, "t2m.npy"}, "'shape': (2,)", ""},
		{[]string{"cat", "--as-npy", "--as-v2", src, "a.npy"}, "", "choose one"},
		{[]string{"info", "--as-npy", src}, "a v2 3 2 - |u1 none none: stored uncompressed 1 chunks, 2 B 1.00 raw, as a.npy", ""},
		{[]string{"info", "--as-npy", src}, "o v2 1 1 - |O vlen-utf8() - 0 chunks, 0 B - not shown (--as-npy): codec: array cannot be presented raw: object dtype |O", ""},
		{[]string{"info", "--as-npy", root}, ". v2 2 2 - <i2 none none: stored uncompressed 1 chunks, 4 B 1.00 raw, as t2m.npy", ""},
		{[]string{"info", src}, "a v2 3 2 - |u1 none none: stored uncompressed 1 chunks, 2 B 1.00 raw", ""},
		{[]string{"info", "-o", "ro,as_npy", src}, "raw, as a.npy", ""}, // as fstab says it
	})
	// The whole file: 128 bytes of header, chunk 0, then chunk 1 (missing)
	// as the fill value.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"cat", "--as-npy", src, "a.npy"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b := out.Bytes(); len(b) != 131 || !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) || !bytes.HasSuffix(b, []byte("\n\x01\x02\x09")) {
		t.Errorf("cat --as-npy a.npy: %q", b)
	}
	out.Reset()
	if err := run(context.Background(), []string{"cat", "--as-npy", root, "t2m.npy"}, &out, io.Discard); err != nil || !strings.HasSuffix(out.String(), "\x05\x00\x06\x00") {
		t.Errorf("cat --as-npy t2m.npy: %q, %v", out.String(), err)
	}
}
