// Package zfuse_test holds checks on the repository as a whole.
package zfuse_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/zfuse/zfuse/"

// allowed is the README's package table: which of our packages each
// package may import (in its non-test and test files alike). Change both
// together.
// Besides, every package's _test.go files may import testutil, and only
// they: the test helpers, which import the standard library alone.
var allowed = map[string][]string{
	"codec":       {},
	"gpu":         {"codec"},
	"cache":       {"internal/flight", "internal/bytesize"},
	"store":       {"internal/flight"},
	"zarr":        {"codec"},
	"netcdf":      {},
	"readahead":   {"cache", "codec", "store", "zarr", "internal/bytesize"},
	"tree":        {"readahead", "zarr", "store", "codec", "netcdf", "internal/flight"},
	"fusemount":   {"tree", "readahead", "zarr", "store", "internal/mountinfo", "internal/uring"},
	"convert":     {"tree", "zarr", "codec", "store", "readahead"},
	"csidriver":   {"internal/mountinfo", "internal/bytesize"},
	"cmd/zfuse":   {"*"},
	"integration": {},
	testutil:      {},

	// internal/…: small helpers more than one package needs, each its own
	// entry, so that a package names the helpers it uses.
	"internal/bench":     {},
	"internal/flight":    {},
	"internal/memlimit":  {},
	"internal/mountinfo": {},
	"internal/bytesize":  {},
	"internal/uring":     {},
}

const testutil = "internal/testutil"

// goFUSE is go-fuse, which only the FUSE adapter and the command import:
// the model of the presented tree, and what builds on it (convert), link
// no FUSE.
const goFUSE = "github.com/hanwen/go-fuse/"

var fuseUsers = []string{"fusemount", "cmd/zfuse"}

// TestImports fails when a package imports one of ours that the table does
// not allow, when a non-test file imports testutil, when testutil imports
// anything outside the standard library, or when a package other than
// fuseUsers imports go-fuse. Sub-packages (store/http)
// count as their top package; internal/… packages count one by one.
func TestImports(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." || strings.Contains(dir, "testdata") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		from := top(dir)
		ok, known := allowed[from]
		if !known {
			t.Errorf("%s: package %q is not in the import table", path, from)
			return nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if from == testutil && strings.Contains(first, ".") {
				t.Errorf("%s imports %s: %s may import only the standard library", path, p, testutil)
			}
			if strings.HasPrefix(p, goFUSE) && !slices.Contains(fuseUsers, from) {
				t.Errorf("%s imports %s: only %v may import go-fuse", path, p, fuseUsers)
			}
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := top(strings.TrimPrefix(p, module))
			switch {
			case to == testutil && !strings.HasSuffix(path, "_test.go"):
				t.Errorf("%s imports %s: only _test.go files may", path, p)
			case to == testutil, to == from, slices.Contains(ok, "*"), slices.Contains(ok, to):
			default:
				t.Errorf("%s imports %s: %s may import only %v", path, p, from, ok)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// top maps a directory to its entry in the table.
func top(dir string) string {
	switch {
	case strings.HasPrefix(dir, "cmd/"):
		return "cmd/zfuse"
	case dir == testutil || strings.HasPrefix(dir, testutil+"/"):
		return testutil
	case strings.HasPrefix(dir, "internal/"):
		helper, _, _ := strings.Cut(strings.TrimPrefix(dir, "internal/"), "/")
		return "internal/" + helper
	}
	first, _, _ := strings.Cut(dir, "/")
	return first
}
