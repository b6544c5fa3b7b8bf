package zarr

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// npyCase is one array whose .npy header numpy writes for comparison.
type npyCase struct {
	dtype json.RawMessage // the v2 dtype: a typestr or a structured descr
	shape []int
	order string
}

func (c npyCase) String() string { return fmt.Sprintf("%s %v %s", c.dtype, c.shape, c.order) }

// numpyHeaders writes each case with numpy's np.save and returns the
// header of each file (the bytes before the data).
func numpyHeaders(t *testing.T, cases []npyCase) [][]byte {
	t.Helper()
	testutil.NeedPython(t, "numpy")
	const script = `
import io, json, sys
import numpy as np

def field(f):  # [name, dtype] or [name, dtype, shape]
    t = descr(f[1])
    return (f[0], t) if len(f) == 2 else (f[0], t, tuple(f[2]))

def descr(d):  # a v2 dtype as zarr-python 2 decodes it
    return d if isinstance(d, str) else [field(f) for f in d]

for line in sys.stdin:
    c = json.loads(line)
    a = np.zeros(c["shape"], dtype=np.dtype(descr(c["dtype"])), order=c["order"])
    b = io.BytesIO()
    np.save(b, a)
    v = b.getvalue()
    print(v[:len(v) - a.nbytes].hex())
`
	var in bytes.Buffer
	for _, c := range cases {
		json.NewEncoder(&in).Encode(map[string]any{"dtype": c.dtype, "shape": c.shape, "order": c.order})
	}
	cmd := exec.Command(testutil.Python, "-W", "ignore", "-c", script)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("numpy: %v", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("numpy wrote %d headers for %d arrays", len(lines), len(cases))
	}
	hs := make([][]byte, len(lines))
	for i, l := range lines {
		hs[i] = testutil.Must(hex.DecodeString(l))
	}
	return hs
}

// TestNpyHeader: the header of every .npy file is the one numpy's np.save
// writes for the same array, byte for byte: every dtype zfuse presents, in
// both byte orders, C and F, 0-d to 4-D, structured dtypes (nested, with
// subarray shapes), a header too long for format 1.0 and field names that
// need format 3.0.
func TestNpyHeader(t *testing.T) {
	str := func(s string) json.RawMessage { return testutil.Must(json.Marshal(s)) }
	var cases []npyCase
	for _, dt := range []string{"|b1", "|i1", "|u1", "<i2", ">i2", "<u4", ">i8", "<f2", ">f4", "<f8", "<c8", ">c16",
		"<M8[ns]", ">m8[s]", "<M8", "|S1", "|S7", "<U1", ">U13", "|V5"} {
		for _, shape := range [][]int{{}, {7}, {3, 1000}, {2, 3, 4, 5}, {1, 4}, {0, 4}} {
			for _, order := range []string{"C", "F"} {
				cases = append(cases, npyCase{str(dt), shape, order})
			}
		}
	}
	wide := make([]string, 4000) // a descr of over 64 KiB: format 2.0
	for i := range wide {
		wide[i] = fmt.Sprintf(`["field_%04d", "<f8"]`, i)
	}
	for _, d := range []string{
		`[["a", "<i4"], ["b", "<f8", [2]]]`,
		`[["x", [["y", ">u2"], ["z", "|S3", [2, 2]]]], ["pad", "|V4"]]`,
		`[["it's", "<i2"], ["say \"hi\"", "<i2"], ["back\\slash", "<i2"]]`,
		`[["température", "<f4"]]`, // Latin-1: still format 1.0
		`[["温度", "<f4"]]`,          // not Latin-1: format 3.0
		"[" + strings.Join(wide, ", ") + "]",
	} {
		cases = append(cases, npyCase{json.RawMessage(d), []int{3, 2}, "C"}, npyCase{json.RawMessage(d), []int{3, 2}, "F"})
	}
	want := numpyHeaders(t, cases)
	for i, c := range cases {
		doc, _ := json.Marshal(map[string]any{"zarr_format": 2, "shape": c.shape, "chunks": max1(c.shape), "dtype": c.dtype,
			"compressor": nil, "filters": nil, "fill_value": nil, "order": c.order})
		a, err := ParseV2(doc)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		got, err := a.NpyHeader()
		if err != nil {
			t.Errorf("%v: %v", c, err)
			continue
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("%v: header\n%q\nwant numpy's\n%q", c, got, want[i])
		}
		if len(got)%npyAlign != 0 {
			t.Errorf("%v: header of %d bytes: data not 64-byte aligned", c, len(got))
		}
	}
}

// max1 is shape with every axis at least 1: a chunk shape for it.
func max1(shape []int) []int {
	c := make([]int, len(shape))
	for i, d := range shape {
		c[i] = max(d, 1)
	}
	return c
}

func TestNpyHeaderRefused(t *testing.T) {
	obj, err := ParseV2([]byte(`{"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "|O", "compressor": null,
		"filters": [{"id": "vlen-utf8"}], "fill_value": null, "order": "C"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obj.NpyHeader(); !errors.Is(err, codec.ErrNotRaw) {
		t.Errorf("object array: %v, want ErrNotRaw", err)
	}
	huge := flatArray(t, []int{1 << 40, 1 << 30}, []int{1 << 20, 1}, "<f8", "C", 0)
	if _, err := huge.NpyHeader(); !errors.Is(err, codec.ErrNotRaw) {
		t.Errorf("2^70 elements: %v, want ErrNotRaw", err)
	}
}

func TestNpyAttrs(t *testing.T) {
	v3, _, err := ParseV3([]byte(`{"zarr_format": 3, "node_type": "array", "shape": [2, 3], "data_type": "float32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
		"chunk_key_encoding": {"name": "default"}, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
		"fill_value": 0, "attributes": {"units": "K"}, "dimension_names": ["lat", "lon"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(testutil.Must(v3.NpyAttrs(nil)), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[_ARRAY_DIMENSIONS:[lat lon] units:K]" {
		t.Errorf("v3 attributes: %v", got)
	}
	v2 := flatArray(t, []int{3}, []int{3}, "<f8", "C", 0)
	if b := testutil.Must(v2.NpyAttrs([]byte(`{"units": NaN}`))); string(b) != `{"units": NaN}` {
		t.Errorf("v2 .zattrs served as %s, want as stored", b)
	}
	if b := testutil.Must(v2.NpyAttrs(nil)); string(b) != "{}" {
		t.Errorf("v2 without .zattrs: %s, want {}", b)
	}
}
