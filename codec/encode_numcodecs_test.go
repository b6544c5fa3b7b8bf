package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// TestNumcodecsEncode checks the encoders against numcodecs 0.11 itself
// (testdata/encode_check.py), both ways:
//
//   - On inputs numcodecs encodes (float fields, random walks, ramps,
//     noise, bools, complex, tiny arrays) with Blosc, LZ4, Zstd, Zlib and
//     GZip: zfuse's Blosc-lz4, Blosc-blosclz and LZ4 bytes equal
//     numcodecs' (c-blosc 1.21 with one thread, liblz4) byte for byte;
//     every other Blosc buffer has the same header (flags, typesize,
//     sizes, block size).
//   - On data nobody here wrote, every array of the numcodecs fixtures in
//     ../shared/conformance, encoded by zfuse with each fixture
//     configuration of the codecs zfuse encodes: numcodecs decodes the
//     result to the array, and zfuse decodes zfuse's and numcodecs' own
//     encodings (the fixture files) to the same bytes. And c-blosc 1.18's
//     compat buffers, decoded and encoded again with their compressor.
func TestNumcodecsEncode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: does not run Python")
	}
	testutil.NeedPython(t, "numcodecs")
	dir := t.TempDir()
	if out, err := exec.Command(testutil.Python, "testdata/encode_check.py", "gen", dir).CombinedOutput(); err != nil {
		t.Fatalf("encode_check.py gen: %v\n%s", err, out)
	}
	type item struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
		File   string          `json:"file"`
		Want   string          `json:"want"`
	}
	var checks []item

	var cases []struct {
		Name     string          `json:"name"`
		Config   json.RawMessage `json:"config"`
		ItemSize int             `json:"itemsize"`
	}
	if err := json.Unmarshal(testutil.Must(os.ReadFile(filepath.Join(dir, "cases.json"))), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Fatalf("encode_check.py wrote %d cases", len(cases))
	}
	identical := 0
	for _, c := range cases {
		raw := testutil.Must(os.ReadFile(filepath.Join(dir, c.Name+".raw")))
		theirs := testutil.Must(os.ReadFile(filepath.Join(dir, c.Name+".nc")))
		e, err := NewEncoder(c.Config, c.ItemSize)
		if err != nil {
			t.Fatalf("%s %s: %v", c.Name, c.Config, err)
		}
		ours, err := e.Encode(make([]byte, 0, e.MaxEncodedLen(len(raw))), raw)
		if err != nil {
			t.Fatalf("%s %s: %v", c.Name, c.Config, err)
		}
		cfg := testutil.Must(confParse(c.Config))
		cname, _ := cfg.String("cname", "")
		switch {
		case cfg.ID() == "lz4" || (cfg.ID() == "blosc" && (cname == "lz4" || cname == "blosclz")):
			if !bytes.Equal(ours, theirs) {
				t.Errorf("%s %s: %d bytes, numcodecs %d; they differ at byte %d", c.Name, c.Config, len(ours), len(theirs), confFirstDiff(ours, theirs))
			}
			identical++
		case cfg.ID() == "blosc":
			// The same container; only whether the buffer was stored raw
			// (memcpyed) may differ, where the stream compressors (zstd,
			// zlib, lz4hc: other implementations) land on either side of
			// nbytes for data that barely compresses (klauspost's zstd
			// stores an unshuffled float64 random walk that libzstd makes
			// 5% smaller).
			h, _ := ParseBlosc(theirs)
			mask := []byte{0xFF, 0xFF, 0xFF &^ bloscMemcpyed}
			for i, m := range mask {
				if ours[i]&m != theirs[i]&m {
					t.Errorf("%s %s: header % x, numcodecs % x", c.Name, c.Config, ours[:12], theirs[:12])
				}
			}
			if !bytes.Equal(ours[3:12], theirs[3:12]) || (ours[2] != theirs[2] && float64(h.Nbytes)/float64(h.Cbytes) > 1.1) {
				t.Errorf("%s %s: header % x, numcodecs % x (ratio %.3f)", c.Name, c.Config, ours[:12], theirs[:12], float64(h.Nbytes)/float64(h.Cbytes))
			}
		}
		f := filepath.Join(dir, c.Name+".go")
		if err := os.WriteFile(f, ours, 0o644); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, item{c.Name, c.Config, f, filepath.Join(dir, c.Name+".raw")})
	}
	if identical < 50 {
		t.Errorf("only %d byte-for-byte comparisons", identical)
	}

	// The numcodecs fixtures.
	root := filepath.Join(testutil.Conformance(t, "numcodecs"), "fixture")
	refused := map[string]bool{}
	for _, folder := range []string{"blosc", "lz4", "zstd", "zlib", "gzip", "shuffle", "crc32", "adler32",
		"delta/bool", "delta/float32", "delta/float64", "delta/int32", "delta/uint16"} {
		cfgs, _ := filepath.Glob(filepath.Join(root, folder, "codec.*", "config.json"))
		arrays, _ := filepath.Glob(filepath.Join(root, folder, "array.*.npy"))
		if len(cfgs) == 0 || len(arrays) == 0 {
			t.Fatalf("no fixture configs or arrays for %s", folder)
		}
		for _, cfgPath := range cfgs {
			cfg := testutil.Must(os.ReadFile(cfgPath))
			d := testutil.Must(New(cfg))
			codecDir := filepath.Dir(cfgPath)
			for _, arrPath := range arrays {
				arr, err := testutil.ReadNPY(arrPath)
				if err != nil {
					t.Fatal(err)
				}
				nn := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(arrPath), "array."), ".npy")
				name := fmt.Sprintf("%s/%s/array.%s", folder, filepath.Base(codecDir), nn)
				if arr.Object() {
					continue
				}
				size := len(arr.Data)
				if n := prodInts(arr.Shape); n > 0 {
					size /= n
				}
				e, err := NewEncoder(cfg, size)
				var ours []byte
				if err == nil {
					ours, err = e.Encode(make([]byte, 0, e.MaxEncodedLen(len(arr.Data))), arr.Data)
				}
				if errors.Is(err, ErrConfig) {
					refused[folder+" "+string(bytes.Join(bytes.Fields(cfg), nil))+" "+arr.Descr] = true
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := DecodeFull(d, make([]byte, 0, len(arr.Data)), ours)
				if err != nil || !bytes.Equal(got, arr.Data) {
					t.Errorf("%s: zfuse does not decode zfuse's encoding: %v", name, err)
				}
				if theirs, err := os.ReadFile(filepath.Join(codecDir, "encoded."+nn+".dat")); err == nil {
					if got, err := DecodeFull(d, make([]byte, 0, len(arr.Data)), theirs); err != nil || !bytes.Equal(got, arr.Data) {
						t.Errorf("%s: zfuse decodes numcodecs' encoding differently: %v", name, err)
					}
				}
				f := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".go")
				if err := os.WriteFile(f, ours, 0o644); err != nil {
					t.Fatal(err)
				}
				checks = append(checks, item{name, json.RawMessage(cfg), f, arrPath})
			}
		}
	}
	// What zfuse refuses to encode: Blosc-snappy (numcodecs' wheels lack
	// it too), and deltas that do not invert exactly (floats, bools).
	for r := range refused {
		if !strings.Contains(r, `"snappy"`) && !strings.HasPrefix(r, "delta/float") && !strings.HasPrefix(r, "delta/bool") {
			t.Errorf("refused unexpectedly: %s", r)
		}
	}
	if len(refused) == 0 {
		t.Error("expected snappy and float delta fixtures to be refused")
	}

	// c-blosc's compat buffers (int32 0..999999 from c-blosc 1.18.0):
	// decoded, encoded again with the same compressor and shuffle at
	// clevel 9, decoded by numcodecs.
	compat, _ := filepath.Glob(filepath.Join(testutil.Conformance(t, "c-blosc"), "compat", "blosc-1.18.0-*.cdata"))
	if len(compat) < 5 {
		t.Fatalf("found %d c-blosc 1.18.0 compat files", len(compat))
	}
	for _, p := range compat {
		src := testutil.Must(os.ReadFile(p))
		h := testutil.Must(ParseBlosc(src))
		raw := testutil.Must(DecodeFull(Blosc{}, make([]byte, 0, h.Nbytes), src))
		cname := strings.Split(strings.TrimSuffix(filepath.Base(p), ".cdata"), "-")[2]
		e := &bloscEncoder{Cname: cname, Clevel: 9, Shuffle: h.Shuffle(), Typesize: h.Typesize}
		ours := testutil.Must(e.Encode(make([]byte, 0, e.MaxEncodedLen(len(raw))), raw))
		name := "c-blosc/" + filepath.Base(p)
		rawFile, goFile := filepath.Join(dir, filepath.Base(p)+".raw"), filepath.Join(dir, filepath.Base(p)+".go")
		if err := errors.Join(os.WriteFile(rawFile, raw, 0o644), os.WriteFile(goFile, ours, 0o644)); err != nil {
			t.Fatal(err)
		}
		cfg := testutil.Must(json.Marshal(map[string]any{"id": "blosc", "cname": cname, "clevel": 9, "shuffle": h.Shuffle()}))
		checks = append(checks, item{name, cfg, goFile, rawFile})
	}

	list := filepath.Join(dir, "check.json")
	if err := os.WriteFile(list, testutil.Must(json.Marshal(checks)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testutil.Python, "testdata/encode_check.py", "check", list).Output()
	if err != nil {
		t.Fatalf("encode_check.py check: %v", err)
	}
	var seen []string
	for line := range bytes.Lines(out) {
		var r struct{ Name, Err string }
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("encode_check.py printed %q: %v", line, err)
		}
		seen = append(seen, r.Name)
		if r.Err != "" {
			t.Errorf("%s: %s", r.Name, r.Err)
		}
	}
	if len(seen) != len(checks) {
		t.Errorf("numcodecs checked %d of %d encodings", len(seen), len(checks))
	}
	t.Logf("%d cases, %d byte-identical to numcodecs; %d encodings decoded by numcodecs; refused: %v",
		len(cases), identical, len(seen), slices.Sorted(func(y func(string) bool) {
			for r := range refused {
				if !y(r) {
					return
				}
			}
		}))
}

func prodInts(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}
