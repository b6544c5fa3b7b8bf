package integration

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestMixedMetadata: array directories holding both .zarray and zarr.json
// (testdata/mixed.py: zarr-python 2.13 arrays converted to v3 in place, as
// zarr-python 3 and zarrs leave them) present the v2 view, and every
// metadata document served describes the decoded chunks: zarr-python reads
// the same through the mount's .zarray (plain and consolidated) as from the
// original, zarrita reads the same through the mount's rewritten zarr.json
// as from the original zarr.json, and the two readers agree (through
// --as-v2, which hides every zarr.json). A zarr.json
// that does not describe the chunks is hidden, with a Warn line naming its
// directory; --as-v2 hides every zarr.json; zfuse info says which.
func TestMixedMetadata(t *testing.T) {
	needMount(t)
	needPython(t)
	dir := t.TempDir()
	out, err := exec.Command(testutil.Python, filepath.Join(repo, "integration", "testdata", "mixed.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mixed.py: %v\n%s", err, out)
	}
	var arrays struct{ Agree, Disagree []string }
	if err := json.Unmarshal(out, &arrays); err != nil || len(arrays.Agree) < 5 || len(arrays.Disagree) < 2 {
		t.Fatalf("mixed.py printed %s: %v", out, err)
	}
	src := filepath.Join(dir, "mixed.zarr")
	manifest := filepath.Join(dir, "mixed.json")
	orig := zarritaRead(t, src, arrays.Agree)
	if len(orig) != len(arrays.Agree) {
		t.Fatalf("zarrita read %d of the %d converted arrays from the original", len(orig), len(arrays.Agree))
	}

	m := mount(t, src)
	t.Run("zarr-python", func(t *testing.T) { checkPy(t, "read", src, m.Dir, manifest) })
	t.Run("zarrita", func(t *testing.T) {
		sameValues(t, "zarrita through the mount's zarr.json", zarritaRead(t, m.Dir, arrays.Agree), orig)
	})
	for _, p := range arrays.Agree {
		names := testutil.Must(os.ReadDir(filepath.Join(m.Dir, p)))
		if !slices.ContainsFunc(names, func(e os.DirEntry) bool { return e.Name() == "zarr.json" }) {
			t.Errorf("%s: zarr.json not listed", p)
		}
	}
	for _, p := range arrays.Disagree {
		if _, err := os.Stat(filepath.Join(m.Dir, p, "zarr.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/zarr.json: %v; want it hidden", p, err)
		}
		names := testutil.Must(os.ReadDir(filepath.Join(m.Dir, p)))
		if slices.ContainsFunc(names, func(e os.DirEntry) bool { return e.Name() == "zarr.json" }) {
			t.Errorf("%s: zarr.json listed", p)
		}
		if !m.Stderr.waitFor(10*time.Second, holding(`msg="zarr.json hidden: it does not describe the chunks .zarray does" key=`+p+" ")) {
			t.Errorf("no Warn line names %s:\n%s", p, m.Stderr)
		}
	}

	lines := infoLines(t, src)
	for _, p := range arrays.Agree {
		if l := lines[p]; !strings.HasPrefix(l, p+" v2+v3 ") || !strings.HasSuffix(l, " raw; zarr.json rewritten too") {
			t.Errorf("zfuse info: %q", l)
		}
	}
	for _, p := range arrays.Disagree {
		if l := lines[p]; !strings.HasPrefix(l, p+" v2+v3 ") || !strings.Contains(l, " raw; zarr.json hidden: ") {
			t.Errorf("zfuse info: %q", l)
		}
	}

	t.Run("as-v2", func(t *testing.T) {
		m := mount(t, src, "--as-v2")
		checkPy(t, "read", src, m.Dir, manifest)
		// zarr-python through the mount reads what zarrita reads from the
		// original (v3check.py's zarr2 also checks that zarr.json is hidden).
		known := maps.Clone(orig)
		delete(known, "nan_fill") // NaN has no JSON: zarrita's values say 0
		v3Py(t, "zarr2", m.Dir, writeWant(t, known))
		for _, p := range append(slices.Clone(arrays.Agree), arrays.Disagree...) {
			if _, err := os.Stat(filepath.Join(m.Dir, p, "zarr.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("--as-v2: %s/zarr.json: %v; want it hidden", p, err)
			}
		}
		for p, l := range infoLines(t, "--as-v2", src) {
			if p != "PATH" && !strings.HasSuffix(l, " raw; zarr.json hidden (--as-v2)") {
				t.Errorf("zfuse info --as-v2: %q", l)
			}
		}
	})
}
