package testutil

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tt := range []struct {
		env       string
		deps, gpu bool
	}{
		{"", false, false},
		{"deps", true, false},
		{"gpu", false, true},
		{"gpu,deps", true, true},
		{" deps  gpu ", true, true},
		{"nogpu,depsx", false, false},
	} {
		t.Setenv(requireEnv, tt.env)
		if required("deps") != tt.deps || required("gpu") != tt.gpu {
			t.Errorf("%s=%q: required(deps) %v, required(gpu) %v; want %v, %v",
				requireEnv, tt.env, required("deps"), required("gpu"), tt.deps, tt.gpu)
		}
	}
}

// TestNeed runs itself in a child process under each setting of
// ZFUSE_TEST_REQUIRE, and checks that there a missing requirement skips the
// test or fails it.
func TestNeed(t *testing.T) {
	if kind := os.Getenv("ZFUSE_TESTUTIL_CHILD"); kind != "" {
		need(t, kind, "present", true)
		need(t, kind, "thing", false)
		t.Fatal("need returned for a missing thing")
	}
	for _, tt := range []struct {
		kind, env string
		fails     bool
	}{
		{"deps", "gpu", false},
		{"deps", "deps", true},
		{"gpu", "deps", false},
		{"gpu", "gpu,deps", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeed$", "-test.v")
		cmd.Env = append(os.Environ(), requireEnv+"="+tt.env, "ZFUSE_TESTUTIL_CHILD="+tt.kind)
		out, err := cmd.CombinedOutput()
		skipped := strings.Contains(string(out), "--- SKIP: TestNeed") && strings.Contains(string(out), "no thing")
		failed := strings.Contains(string(out), "--- FAIL: TestNeed") && strings.Contains(string(out), "thing required")
		if tt.fails && (!failed || err == nil) || !tt.fails && (!skipped || err != nil) {
			t.Errorf("need(%s) with %s=%q: exit %v, want failed %v:\n%s", tt.kind, requireEnv, tt.env, err, tt.fails, out)
		}
	}
}

func TestSharedDir(t *testing.T) {
	repo, err := Repo()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "internal", "testutil", "need.go")); err != nil {
		t.Errorf("Repo() = %s: %v", repo, err)
	}
	dir := t.TempDir()
	t.Setenv("ZFUSE_SHARED", dir)
	if got := SharedDir(); got != dir {
		t.Errorf("SharedDir() = %q with ZFUSE_SHARED=%s", got, dir)
	}
	t.Setenv("ZFUSE_SHARED", filepath.Join(dir, "absent"))
	if got := SharedDir(); got != "" {
		t.Errorf("SharedDir() = %q for an absent $ZFUSE_SHARED", got)
	}
}

// npyFile builds a .npy file of format version v with header h.
func npyFile(v byte, h string, data []byte) []byte {
	b := append([]byte("\x93NUMPY"), v, 0)
	if v == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	}
	return append(append(b, h...), data...)
}

func TestParseNPY(t *testing.T) {
	head := func(descr string, fortran bool, shape string) string {
		return fmt.Sprintf("{'descr': %s, 'fortran_order': %v, 'shape': (%s), }\n", descr, map[bool]string{true: "True", false: "False"}[fortran], shape)
	}
	for _, tt := range []struct {
		name string
		file []byte
		want NPY // Data not compared
		err  bool
	}{
		{"v1 i4", npyFile(1, head("'<i4'", false, "2, 3"), make([]byte, 24)), NPY{Descr: "<i4", Shape: []int{2, 3}}, false},
		{"v2 fortran", npyFile(2, head("'>f8'", true, "3,"), make([]byte, 24)), NPY{Descr: ">f8", Fortran: true, Shape: []int{3}}, false},
		{"v3 scalar", npyFile(3, head("'|u1'", false, ""), []byte{7}), NPY{Descr: "|u1"}, false},
		{"unicode", npyFile(1, head("'<U2'", false, "2,"), make([]byte, 16)), NPY{Descr: "<U2", Shape: []int{2}}, false},
		{"object", npyFile(1, head("'|O'", false, "2,"), []byte("pickle")), NPY{Descr: "|O", Shape: []int{2}}, false},
		{"structured", npyFile(1, head("[('a', '<i4')]", false, "2,"), make([]byte, 8)), NPY{Shape: []int{2}}, false},
		{"short payload", npyFile(1, head("'<i4'", false, "2, 3"), make([]byte, 23)), NPY{}, true},
		{"no shape", npyFile(1, "{'descr': '<i4', 'fortran_order': False}", nil), NPY{}, true},
		{"version 4", npyFile(4, head("'<i4'", false, ""), make([]byte, 4)), NPY{}, true},
		{"truncated header", npyFile(1, head("'<i4'", false, ""), nil)[:20], NPY{}, true},
		{"not npy", []byte("PK\x03\x04 a zip file"), NPY{}, true},
	} {
		a, err := ParseNPY(tt.file)
		if tt.err {
			if err == nil {
				t.Errorf("%s: no error", tt.name)
			}
			continue
		}
		if err != nil || a.Descr != tt.want.Descr || a.Fortran != tt.want.Fortran || !slices.Equal(a.Shape, tt.want.Shape) {
			t.Errorf("%s: %+v, %v; want %+v", tt.name, a, err, tt.want)
		}
		if a.Object() != (tt.want.Descr == "|O") {
			t.Errorf("%s: Object() = %v", tt.name, a.Object())
		}
	}
}

func TestItemSize(t *testing.T) {
	for descr, want := range map[string]int{"<f8": 8, "|S3": 3, "<U4": 16, "<M8[ns]": 8, "|b1": 1, "|O": -1, "f8": -1, "<i": -1} {
		n, err := ItemSize(descr)
		if want < 0 && err == nil || want >= 0 && (err != nil || n != want) {
			t.Errorf("ItemSize(%q) = %d, %v; want %d", descr, n, err, want)
		}
	}
}

// TestReadNPY reads two arrays numpy wrote (numcodecs' fixtures).
func TestReadNPY(t *testing.T) {
	dir := Conformance(t, "numcodecs/fixture/blosc")
	a, err := ReadNPY(filepath.Join(dir, "array.00.npy"))
	if err != nil || a.Descr != "<i4" || a.Fortran || !slices.Equal(a.Shape, []int{1000}) || len(a.Data) != 4000 {
		t.Fatalf("array.00: %v: dtype %q fortran %v shape %v, %d bytes", err, a.Descr, a.Fortran, a.Shape, len(a.Data))
	}
	a, err = ReadNPY(filepath.Join(dir, "array.03.npy"))
	if err != nil || a.Descr != "|b1" || !a.Fortran || !slices.Equal(a.Shape, []int{100, 10}) || len(a.Data) != 1000 {
		t.Fatalf("array.03: %v: dtype %q fortran %v shape %v, %d bytes", err, a.Descr, a.Fortran, a.Shape, len(a.Data))
	}
}

// TestZarritaV3 checks the known values against the store: every array
// they name exists, and its shape is the zarr.json's.
func TestZarritaV3(t *testing.T) {
	root := Conformance(t, "zarrita.js/fixtures/v3/data.zarr")
	for name, v := range ZarritaV3 {
		doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name), "zarr.json"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var meta struct{ Shape []int }
		if err := json.Unmarshal(doc, &meta); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		n := 1
		for _, d := range v.Shape {
			n *= d
		}
		if !slices.Equal(meta.Shape, v.Shape) || n != len(v.Data) {
			t.Errorf("%s: %d values of shape %v; zarr.json's shape is %v", name, len(v.Data), v.Shape, meta.Shape)
		}
	}
}

func TestReferenceEncoders(t *testing.T) {
	// Three 2-byte elements and a tail byte.
	if got, want := ByteShuffle([]byte{1, 2, 3, 4, 5, 6, 7}, 2), []byte{1, 3, 5, 2, 4, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("ByteShuffle = %v, want %v", got, want)
	}
	// Eight 1-byte elements: element i's bit k is bit i of byte k.
	if got, want := BitShuffle([]byte{1, 0, 1, 0, 0, 0, 0, 0x80}, 1), []byte{5, 0, 0, 0, 0, 0, 0, 0x80}; !slices.Equal(got, want) {
		t.Errorf("BitShuffle = %v, want %v", got, want)
	}
	if got, want := BitShuffle([]byte{1, 2, 3}, 1), []byte{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("BitShuffle of 3 elements = %v, want them as they are", got)
	}
	// A 2x3 array of 1-byte elements, transposed to 3x2.
	if got, want := Transpose([]byte{1, 2, 3, 4, 5, 6}, []int{2, 3}, []int{1, 0}, 1), []byte{1, 4, 2, 5, 3, 6}; !slices.Equal(got, want) {
		t.Errorf("Transpose = %v, want %v", got, want)
	}
}
