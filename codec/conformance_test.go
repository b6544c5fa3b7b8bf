package codec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// confLossy are the fixture folders whose decode is not the input array;
// the expected bytes are numcodecs 0.11's decode of each encoded file.
var confLossy = map[string]bool{"fixedscaleoffset": true, "quantize": true, "astype/f": true}

// confOurs are the codec ids written in this package's files by the owner of
// this test, which must give ErrTooLarge when dst is one byte short.
var confOurs = map[string]bool{
	"zstd": true, "zlib": true, "gzip": true, "bz2": true, "lzma": true, "base64": true,
	"crc32": true, "adler32": true, "crc32c": true, "fletcher32": true, "jenkins_lookup3": true,
}

var confEncoded = regexp.MustCompile(`^encoded\.(\d+)\.dat$`)

// TestConformanceNumcodecs decodes every numcodecs backward-compatibility
// fixture (numcodecs/fixture/<codec>/codec.MM/encoded.NN.dat) and compares
// it with array.NN.npy's payload, as numcodecs' check_backwards_compatibility
// does. Object codecs must be refused with ErrNotRaw. A codec not yet
// registered fails its subtests.
func TestConformanceNumcodecs(t *testing.T) {
	root := filepath.Join(testutil.Conformance(t, "numcodecs"), "fixture")
	decodedRoot := filepath.Join(testutil.Conformance(t, "numcodecs"), "decoded_by_numcodecs_0.11")
	configs, err := filepath.Glob(filepath.Join(root, "*", "codec.*", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	nested, _ := filepath.Glob(filepath.Join(root, "*", "*", "codec.*", "config.json"))
	configs = append(configs, nested...)
	slices.Sort(configs)
	if len(configs) < 80 {
		t.Fatalf("found %d codec configs under %s; the MANIFEST lists about 90", len(configs), root)
	}
	for _, cfgPath := range configs {
		codecDir := filepath.Dir(cfgPath)
		arrayDir := filepath.Dir(codecDir)
		rel := filepath.ToSlash(testutil.Must(filepath.Rel(root, arrayDir)))
		cfg := testutil.Must(os.ReadFile(cfgPath))
		d, newErr := New(cfg)
		id := testutil.Must(confParse(cfg)).ID()
		files := testutil.Must(os.ReadDir(codecDir))
		for _, f := range files {
			m := confEncoded.FindStringSubmatch(f.Name())
			if m == nil {
				continue
			}
			nn := m[1]
			name := rel + "/" + filepath.Base(codecDir) + "/encoded." + nn
			t.Run(name, func(t *testing.T) {
				arr, err := testutil.ReadNPY(filepath.Join(arrayDir, "array."+nn+".npy"))
				if err != nil {
					t.Fatal(err)
				}
				if notRaw[id] || arr.Object() {
					if !errors.Is(newErr, ErrNotRaw) {
						t.Fatalf("New(%s) = %v, want an error wrapping ErrNotRaw (dtype %s)", cfg, newErr, arr.Descr)
					}
					return
				}
				if newErr != nil {
					if errors.Is(newErr, ErrUnknownCodec) {
						t.Errorf("codec %q not registered (yet): %v", id, newErr)
						return
					}
					t.Fatalf("New(%s): %v", cfg, newErr)
				}
				want := arr.Data
				if confLossy[rel] {
					dec, err := testutil.ReadNPY(filepath.Join(decodedRoot, rel, filepath.Base(codecDir), "decoded."+nn+".npy"))
					if err != nil {
						t.Fatalf("lossy codec without numcodecs' decode: %v", err)
					}
					want = dec.Data
				}
				src := testutil.Must(os.ReadFile(filepath.Join(codecDir, f.Name())))
				got, err := DecodeFull(d, make([]byte, 0, len(want)), src)
				if err != nil {
					t.Fatalf("decode %d bytes (%s %v) with %s: %v", len(src), arr.Descr, arr.Shape, bytes.Join(bytes.Fields(cfg), nil), err)
				}
				if i := confFirstDiff(got, want); i >= 0 {
					t.Fatalf("%s %v: decoded bytes differ from numcodecs' at byte %d of %d", arr.Descr, arr.Shape, i, len(want))
				}
				if len(want) == 0 {
					return
				}
				_, err = d.Decode(make([]byte, 0, len(want)-1), src)
				if err == nil {
					t.Fatalf("decode into %d bytes of room succeeded; want an error", len(want)-1)
				}
				if confOurs[id] && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("decode into one byte too little room: %v, want ErrTooLarge", err)
				}
			})
		}
	}
}

// confParse parses a codec config.
func confParse(b []byte) (Config, error) {
	var c Config
	err := json.Unmarshal(b, &c)
	return c, err
}

// confFirstDiff is the index of the first differing byte, or -1 if equal.
func confFirstDiff(got, want []byte) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	return -1
}

// TestConformancePoolAgrees decodes every non-lossy numcodecs fixture of one
// codec per folder through a Pool and through Batch, and checks that both
// agree byte for byte and error for error.
func TestConformancePoolAgrees(t *testing.T) {
	root := filepath.Join(testutil.Conformance(t, "numcodecs"), "fixture")
	configs, _ := filepath.Glob(filepath.Join(root, "*", "codec.*", "config.json"))
	p := NewPool(4)
	defer p.Close()
	for _, cfgPath := range configs {
		d, err := New(testutil.Must(os.ReadFile(cfgPath)))
		if err != nil {
			continue // reported by TestConformanceNumcodecs
		}
		var jobs []Job
		encs, _ := filepath.Glob(filepath.Join(filepath.Dir(cfgPath), "encoded.*.dat"))
		for _, e := range encs {
			src := testutil.Must(os.ReadFile(e))
			jobs = append(jobs, Job{Src: src, Dst: make([]byte, 0, 64<<10)})
			jobs = append(jobs, Job{Src: src[:len(src)/2], Dst: make([]byte, 0, 64<<10)})
		}
		ref := slices.Clone(jobs)
		for i := range ref {
			ref[i].Dst = make([]byte, 0, cap(jobs[i].Dst))
		}
		ctx := context.Background()
		if err := p.Batch(d).DecodeBatch(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		if err := Batch(d).DecodeBatch(ctx, ref); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.Dir(cfgPath), root)
		for i := range jobs {
			if !bytes.Equal(jobs[i].Dst, ref[i].Dst) || (jobs[i].Err == nil) != (ref[i].Err == nil) {
				t.Errorf("%s job %d: pool (%d bytes, %v) != batch (%d bytes, %v)", name, i, len(jobs[i].Dst), jobs[i].Err, len(ref[i].Dst), ref[i].Err)
			}
		}
	}
}
