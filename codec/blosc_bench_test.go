package codec

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// BenchmarkNumcodecsFiles decodes the chunks that codec/testdata/bench_c.py
// writes with numcodecs into $ZFUSE_BENCH_DIR (NAME.json config, NAME.enc
// encoded, NAME.raw decoded), one sub-benchmark per NAME, so that Go and C
// speeds are measured on the same bytes. It skips when the variable is
// unset; run it through bench_c.py (make bench-c).
func BenchmarkNumcodecsFiles(b *testing.B) {
	dir := os.Getenv("ZFUSE_BENCH_DIR")
	if dir == "" {
		b.Skip("ZFUSE_BENCH_DIR not set: run codec/testdata/bench_c.py")
	}
	cfgs, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(cfgs) == 0 {
		b.Fatalf("no *.json in %s (%v)", dir, err)
	}
	sort.Strings(cfgs)
	for _, cfgPath := range cfgs {
		name := strings.TrimSuffix(filepath.Base(cfgPath), ".json")
		cfg, err1 := os.ReadFile(cfgPath)
		enc, err2 := os.ReadFile(filepath.Join(dir, name+".enc"))
		raw, err3 := os.ReadFile(filepath.Join(dir, name+".raw"))
		if err1 != nil || err2 != nil || err3 != nil {
			b.Fatal(err1, err2, err3)
		}
		b.Run(name, func(b *testing.B) {
			d, err := New(cfg)
			if err != nil {
				b.Skipf("%s: %v", cfg, err)
			}
			dst := make([]byte, 0, len(raw))
			got, err := d.Decode(dst, enc)
			if err != nil || !bytes.Equal(got, raw) {
				b.Fatalf("decode: %v (equal %v)", err, bytes.Equal(got, raw))
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(dst, enc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(raw))/float64(len(enc)), "ratio")
		})
	}
}

// BenchmarkBloscCompat decodes the c-blosc compat files (4 MB of int32
// each), one sub-benchmark per file.
func BenchmarkBloscCompat(b *testing.B) {
	files := compatFiles(b)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		h, err := ParseBlosc(src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(filepath.Base(f), ".cdata"), func(b *testing.B) {
			dst := make([]byte, 0, h.Nbytes)
			b.SetBytes(int64(h.Nbytes))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (Blosc{}).Decode(dst, src); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(h.Nbytes)/float64(len(src)), "ratio")
		})
	}
}
