package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"
)

// TestRunNc: zfuse cat and info under --as-nc: the root group is one
// netCDF file named after SOURCE, info names each array's file and
// variable (or says why it is left out) and lists each file's format; the
// view does not combine with the others, nor with --layout native; and
// --layout native says what it relays.
func TestRunNc(t *testing.T) {
	src := filepath.Join(t.TempDir(), "era.zarr")
	write := storeWriter(t, src)
	write(".zgroup", `{"zarr_format": 2}`)
	write(".zattrs", `{"title": "t"}`)
	write("a/.zarray", `{"zarr_format": 2, "shape": [3], "chunks": [2], "dtype": ">i2",
		"compressor": null, "fill_value": 9, "order": "C", "filters": null}`)
	write("a/.zattrs", `{"_ARRAY_DIMENSIONS": ["x"], "units": "m"}`)
	write("a/0", "\x00\x01\x00\x02")
	write("c/.zarray", `{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "<c8",
		"compressor": null, "fill_value": null, "order": "C", "filters": null}`)
	checkRuns(t, []runCase{
		{[]string{"info", "--as-nc", src}, "a v2 3 2 - >i2 none none: stored uncompressed 1 chunks, 4 B 1.00 raw, as era.nc variable a (short)", ""},
		{[]string{"info", "--as-nc", src}, "not shown (--as-nc): no netCDF classic type for <c8", ""},
		{[]string{"info", "--as-nc", src}, "FILE GROUP FORMAT SIZE VARIABLES era.nc . CDF-2 (64-bit offset)", ""},
		{[]string{"info", "-o", "ro,as_nc", src}, "raw, as era.nc variable a", ""}, // as fstab says it
		{[]string{"info", "--layout", "native", src}, "raw, relaid (--layout native): order C, <i2", ""},
		{[]string{"info", "--as-nc", "--as-npy", src}, "", "choose one"},
		{[]string{"info", "--as-nc", "--layout", "native", src}, "", "always big-endian"},
		{[]string{"info", "--layout", "sideways", src}, "", "want stored or native"},
		{[]string{"cat", "--as-nc", src, "a"}, "", "no such file"},
		{[]string{"cat", "--as-nc", src, ".zgroup"}, "", "no such file"},
	})
	// The whole file: the header, a's 3 shorts (chunk 1 is missing: the
	// fill value) and 2 bytes of padding, as the fill value too.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"cat", "--as-nc", src, "era.nc"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b := out.Bytes(); !bytes.HasPrefix(b, []byte("CDF\x02")) || !bytes.HasSuffix(b, []byte("\x00\x01\x00\x02\x00\x09\x00\x09")) {
		t.Errorf("cat --as-nc era.nc: %q", b)
	}
}
