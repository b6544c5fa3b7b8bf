package testutil

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// An NPY is a .npy file (numpy's format, versions 1 to 3): its header
// fields and its payload as stored, in Fortran order when Fortran is set
// (numpy's tobytes(order='A')), which is what a filter or codec decodes to.
type NPY struct {
	Descr   string // numpy typestr, e.g. "<i4", "|O"; "" for structured dtypes
	Fortran bool
	Shape   []int
	Data    []byte
}

// Object reports whether the array holds Python objects (a pickle, not raw
// elements).
func (a NPY) Object() bool { return a.Descr == "|O" || a.Descr == "O" }

// ReadNPY reads and parses the .npy file at path.
func ReadNPY(path string) (NPY, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return NPY{}, err
	}
	a, err := ParseNPY(b)
	if err != nil {
		return a, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

var (
	npyDescr   = regexp.MustCompile(`'descr':\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order':\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
)

// ParseNPY parses the bytes of a .npy file. Data aliases b. For arrays of
// fixed-size elements the payload must be exactly shape × item size.
func ParseNPY(b []byte) (NPY, error) {
	var a NPY
	h, data, err := npyHeader(b)
	if err != nil {
		return a, err
	}
	a.Data = data
	if m := npyDescr.FindStringSubmatch(h); m != nil {
		a.Descr = m[1]
	} else if !strings.Contains(h, "'descr': [") {
		return a, fmt.Errorf("npy header without descr: %q", h)
	}
	m := npyFortran.FindStringSubmatch(h)
	if m == nil {
		return a, fmt.Errorf("npy header without fortran_order: %q", h)
	}
	a.Fortran = m[1] == "True"
	m = npyShape.FindStringSubmatch(h)
	if m == nil {
		return a, fmt.Errorf("npy header without shape: %q", h)
	}
	for _, f := range strings.Split(m[1], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return a, fmt.Errorf("npy shape %q", m[1])
		}
		a.Shape = append(a.Shape, n)
	}
	if !a.Object() && a.Descr != "" {
		size, err := ItemSize(a.Descr)
		if err != nil {
			return a, err
		}
		n := size
		for _, d := range a.Shape {
			n *= d
		}
		if n != len(a.Data) {
			return a, fmt.Errorf("npy payload %d bytes, header says %d", len(a.Data), n)
		}
	}
	return a, nil
}

// npyHeader splits a .npy file b into its header dictionary's text and the
// payload after it, checking the magic, the version and the header length.
func npyHeader(b []byte) (header string, data []byte, err error) {
	if len(b) < 10 || !bytes.HasPrefix(b, []byte("\x93NUMPY")) {
		return "", nil, errors.New("not a .npy file")
	}
	var hlen, start int
	switch b[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(b[8:])), 10
	case 2, 3:
		if len(b) < 12 {
			return "", nil, errors.New("npy header truncated")
		}
		hlen, start = int(binary.LittleEndian.Uint32(b[8:])), 12
	default:
		return "", nil, fmt.Errorf("npy version %d", b[6])
	}
	if start+hlen > len(b) {
		return "", nil, errors.New("npy header truncated")
	}
	return string(b[start : start+hlen]), b[start+hlen:], nil
}

// ItemSize is the element size of a numpy typestr ("<f8" 8, "|S3" 3, "<U4"
// 16, "<M8[ns]" 8). Object dtypes have none.
func ItemSize(descr string) (int, error) {
	if len(descr) < 2 || !strings.ContainsRune("<>|=", rune(descr[0])) {
		return 0, fmt.Errorf("typestr %q", descr)
	}
	kind, rest := descr[1], descr[2:]
	if i := strings.IndexByte(rest, '['); i >= 0 {
		rest = rest[:i] // datetime unit
	}
	if kind == 'O' {
		return 0, fmt.Errorf("object typestr %q has no item size", descr)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("typestr %q", descr)
	}
	if kind == 'U' {
		n *= 4 // UCS-4
	}
	return n, nil
}
