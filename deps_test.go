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

// allowed is DESIGN.md's import table: which of our packages each package
// may import (in its non-test and test files alike). Change both together.
var allowed = map[string][]string{
	"codec":       {},
	"gpu":         {"codec"},
	"cache":       {},
	"store":       {},
	"zarr":        {"codec"},
	"readahead":   {"cache", "codec", "store", "zarr"},
	"fs":          {"readahead", "zarr", "store", "codec"},
	"cmd/zfuse":   {"*"},
	"integration": {},
}

// TestImports fails when a package imports one of ours that the table does
// not allow. Sub-packages (store/http) count as their top package.
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
			if !strings.HasPrefix(p, module) {
				continue
			}
			to := top(strings.TrimPrefix(p, module))
			if to == from || slices.Contains(ok, "*") || slices.Contains(ok, to) {
				continue
			}
			t.Errorf("%s imports %s: %s may import only %v", path, p, from, ok)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// top maps a directory to its entry in the table.
func top(dir string) string {
	if strings.HasPrefix(dir, "cmd/") {
		return "cmd/zfuse"
	}
	first, _, _ := strings.Cut(dir, "/")
	return first
}
