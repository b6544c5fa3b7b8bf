package gpu

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPTXFresh fails when a kernel source changed without `make kernels`
// (or the PTX was edited by hand): kernels/SOURCES.sha256 lists the sha256
// of every .cu/.h source and of the PTX generated from them.
func TestPTXFresh(t *testing.T) {
	dir := "kernels"
	f, err := os.Open(filepath.Join(dir, "SOURCES.sha256"))
	if err != nil {
		t.Fatalf("%v (run make kernels)", err)
	}
	defer f.Close()
	listed := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line in SOURCES.sha256: %q", sc.Text())
		}
		listed[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var sources int
	for _, path := range files {
		name := filepath.Base(path)
		switch filepath.Ext(name) {
		case ".cu", ".h", ".ptx":
		default:
			continue
		}
		sources++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		switch want, ok := listed[name]; {
		case !ok:
			t.Errorf("%s is not in SOURCES.sha256: run make kernels", name)
		case want != hex.EncodeToString(sum[:]):
			t.Errorf("%s changed since the PTX was generated: run make kernels and commit the PTX", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("SOURCES.sha256 lists %s, which does not exist", name)
	}
	if sources < 5 {
		t.Errorf("found %d kernel files, want zfuse.h, lz4.cu, shuffle.cu and their PTX", sources)
	}
	// The embedded PTX is what was hashed.
	for name, emb := range map[string]string{"lz4.ptx": lz4PTX, "shuffle.ptx": shufflePTX} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if string(b) != emb {
			t.Errorf("embedded %s differs from the file", name)
		}
		entry := map[string]string{"lz4.ptx": lz4Kernel, "shuffle.ptx": unshuffleKernel}[name]
		if !strings.Contains(emb, ".entry "+entry+"(") {
			t.Errorf("%s has no entry %s", name, entry)
		}
	}
}
