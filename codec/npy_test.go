package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// bloscNeed skips a test whose requirement is missing, or fails it when the
// CI environment variable is set (CI must run everything).
func bloscNeed(t testing.TB, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s required in CI", what)
	}
	t.Skipf("no %s", what)
}

// bloscConformanceDir returns the conformance folder:
// $ZFUSE_SHARED/conformance, else ../shared/conformance beside the
// repository root (the directory holding go.mod); "" when there is none.
func bloscConformanceDir() string {
	dir := ""
	if s := os.Getenv("ZFUSE_SHARED"); s != "" {
		dir = filepath.Join(s, "conformance")
	} else if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "conformance")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// bloscConformance returns the conformance folder, skipping the test (failing
// it in CI) when there is none.
func bloscConformance(t testing.TB) string {
	t.Helper()
	dir := bloscConformanceDir()
	bloscNeed(t, "conformance data", dir != "")
	return dir
}

// bloscPython reports whether /usr/bin/python3 can import numcodecs.
var bloscPython = sync.OnceValue(func() bool {
	return exec.Command("/usr/bin/python3", "-c", "import numcodecs, numpy").Run() == nil
})

var (
	npyDescr   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

// readNPY reads a .npy file (format versions 1, 2 and 3) and returns its
// data bytes as stored (C or Fortran order, per fortran), the dtype
// descriptor ("<i4", "|O", ...) and the shape. Structured dtypes (a list
// descr) are not supported.
func readNPY(t testing.TB, path string) (raw []byte, dtype string, fortran bool, shape []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || !bytes.HasPrefix(b, []byte("\x93NUMPY")) {
		t.Fatalf("%s: not a .npy file", path)
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		if len(b) < 12 {
			t.Fatalf("%s: truncated header", path)
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		t.Fatalf("%s: .npy version %d", path, b[6])
	}
	if off+hlen > len(b) {
		t.Fatalf("%s: truncated header", path)
	}
	header := string(b[off : off+hlen])
	m := npyDescr.FindStringSubmatch(header)
	f := npyFortran.FindStringSubmatch(header)
	s := npyShape.FindStringSubmatch(header)
	if m == nil || f == nil || s == nil {
		t.Fatalf("%s: cannot parse header %q", path, header)
	}
	for _, d := range strings.Split(s[1], ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		n, err := strconv.Atoi(d)
		if err != nil {
			t.Fatalf("%s: shape %q", path, s[1])
		}
		shape = append(shape, n)
	}
	return b[off+hlen:], m[1], f[1] == "True", shape
}

func TestReadNPY(t *testing.T) {
	dir := bloscConformance(t)
	raw, dtype, fortran, shape := readNPY(t, filepath.Join(dir, "numcodecs/fixture/blosc/array.00.npy"))
	if dtype != "<i4" || fortran || len(shape) != 1 || shape[0] != 1000 || len(raw) != 4000 {
		t.Fatalf("array.00: dtype %q fortran %v shape %v, %d bytes", dtype, fortran, shape, len(raw))
	}
	_, dtype, fortran, shape = readNPY(t, filepath.Join(dir, "numcodecs/fixture/blosc/array.03.npy"))
	if dtype != "|b1" || !fortran || len(shape) != 2 || shape[0] != 100 || shape[1] != 10 {
		t.Fatalf("array.03: dtype %q fortran %v shape %v", dtype, fortran, shape)
	}
}
