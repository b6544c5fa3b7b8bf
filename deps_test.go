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
	"codec":         {},
	"gpu":           {"codec"},
	"cache":         {"internal/flight", "internal/bytesize"},
	"store":         {"internal/flight"},
	"zarr":          {"codec"},
	"netcdf":        {},
	"readahead":     {"cache", "codec", "store", "zarr", "internal/bytesize"},
	"tree":          {"readahead", "zarr", "store", "codec", "netcdf", "internal/flight"},
	"fusemount":     {"tree", "readahead", "zarr", "store", "internal/mountinfo", "internal/procfs", "internal/uring"},
	"compress":      {"tree", "zarr", "codec", "store", "readahead", "internal/bytesize"},
	"metrics":       {"fusemount", "gpu", "readahead", "store", "zarr", "internal/memlimit"},
	"warmup":        {"zarr", "internal/mountinfo"},
	"daemon":        {},
	"mountlib":      {"fusemount", "gpu", "readahead", "store", "tree", "internal/mountinfo"},
	"csidriver":     {"internal/mountinfo", "internal/bytesize", "store"},
	"cmd/zfuse":     {"*"},
	"cmd/zfuse-csi": {"csidriver", "internal/version"},
	"integration":   {},
	testutil:        {},

	// internal/…: small helpers more than one package needs, each its own
	// entry, so that a package names the helpers it uses.
	"internal/bench":     {"codec", "compress", "fusemount", "mountlib", "zarr", "internal/bytesize", "internal/procfs"},
	"internal/flight":    {},
	"internal/memlimit":  {"internal/mountinfo", "internal/procfs", "internal/bytesize"},
	"internal/mountinfo": {},
	"internal/procfs":    {},
	"internal/bytesize":  {},
	"internal/uring":     {},
	"internal/version":   {},
}

const testutil = "internal/testutil"

// goFUSE is go-fuse, which only the FUSE adapter imports (and its
// sub-packages, the bench's FUSE floor among them): the model of the
// presented tree, what builds on it (compress), the command and the bench
// harness name no go-fuse type.
const goFUSE = "github.com/hanwen/go-fuse/"

var fuseUsers = []string{"fusemount"}

// TestImports fails when a package imports one of ours that the table does
// not allow, when a non-test file imports testutil, when testutil imports
// anything outside the standard library, or when a package other than
// fuseUsers imports go-fuse. Sub-packages (store/httpstore)
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
		cmd, _, _ := strings.Cut(strings.TrimPrefix(dir, "cmd/"), "/")
		return "cmd/" + cmd
	case dir == testutil || strings.HasPrefix(dir, testutil+"/"):
		return testutil
	case strings.HasPrefix(dir, "internal/"):
		helper, _, _ := strings.Cut(strings.TrimPrefix(dir, "internal/"), "/")
		return "internal/" + helper
	}
	first, _, _ := strings.Cut(dir, "/")
	return first
}

// TestReadmeTable fails when README.md's package table and allowed
// disagree: a row for every entry (the internal helpers named in the
// row of internal/…), and each row's imports, the backquoted names of
// its last column, those of the entry ("everything" for "*"; the test
// helpers aside, which every package's tests may import).
func TestReadmeTable(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Packages\n")
	if !ok {
		t.Fatal("README.md has no ## Packages section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	rows := map[string][2]string{} // package: holds, imports
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		name := strings.TrimSuffix(strings.Trim(strings.TrimSpace(cells[0]), "`"), "/")
		rows[name] = [2]string{cells[1], cells[2]}
	}
	quoted := func(s string) []string {
		var out []string
		for i, part := range strings.Split(s, "`") {
			if i%2 == 1 {
				out = append(out, part)
			}
		}
		return out
	}
	for pkg, want := range allowed {
		helper, isHelper := strings.CutPrefix(pkg, "internal/")
		if isHelper && pkg != testutil {
			if row, ok := rows["internal/…"]; !ok || !slices.Contains(quoted(row[0]), helper) {
				t.Errorf("README.md's row of internal/… does not name %s", helper)
			}
			continue
		}
		row, ok := rows[pkg]
		if !ok {
			t.Errorf("README.md's package table has no row for %s", pkg)
			continue
		}
		var got []string
		for _, q := range quoted(row[1]) {
			if q != testutil {
				got = append(got, q)
			}
		}
		if strings.Contains(row[1], "everything") {
			got = append(got, "*")
		}
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want))
		if !slices.Equal(got, w) {
			t.Errorf("README.md says %s may import %v; deps_test.go says %v", pkg, got, w)
		}
	}
	for name := range rows {
		if _, ok := allowed[name]; !ok && name != "internal/…" {
			t.Errorf("README.md's package table has a row for %s, which is not in the import table", name)
		}
	}
}
