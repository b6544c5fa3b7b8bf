package bench

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files writes files of the given sizes under a new directory, named by
// their index ("0", "1", ...), and returns it.
func files(t testing.TB, sizes ...int) string {
	dir := t.TempDir()
	for i, n := range sizes {
		if err := os.WriteFile(filepath.Join(dir, string(rune('0'+i))), bytes.Repeat([]byte{byte(i)}, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadFiles(t *testing.T) {
	dir := files(t, 0, 1, 1<<20, 1<<20+3) // empty, tiny, one buffer, more than one
	for _, r := range []struct {
		name  string
		names []string
		want  int64
		err   error
	}{
		{"none", nil, 0, nil},
		{"empty file", []string{"0"}, 0, nil},
		{"all", []string{"0", "1", "2", "3"}, 1 + 1<<20 + 1<<20 + 3, nil},
		{"twice", []string{"3", "3"}, 2 * (1<<20 + 3), nil},
		{"missing", []string{"1", "nosuch"}, 1, fs.ErrNotExist},
	} {
		t.Run(r.name, func(t *testing.T) {
			n, d, err := ReadFiles(context.Background(), dir, r.names)
			if n != r.want || !errors.Is(err, r.err) || (err == nil) != (r.err == nil) || d < 0 {
				t.Errorf("ReadFiles(%q) = %d, %v, %v; want %d, %v", r.names, n, d, err, r.want, r.err)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ReadFiles(ctx, dir, []string{"1"}); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFiles after ctx ends: %v", err)
	}
}

func TestReadEpochs(t *testing.T) {
	dir := files(t, 1<<20, 5)
	var after []int
	rates, err := ReadEpochs(context.Background(), dir, []string{"0", "1"}, 3, func(e int) error { after = append(after, e); return nil })
	if err != nil || len(rates) != 3 {
		t.Fatalf("ReadEpochs = %v, %v; want 3 rates", rates, err)
	}
	for _, r := range rates {
		if r <= 0 {
			t.Errorf("rate %v", r)
		}
	}
	if !slices.Equal(after, []int{1, 2, 3}) {
		t.Errorf("after saw epochs %v, want 1, 2, 3", after)
	}
	stop := errors.New("stop")
	if _, err := ReadEpochs(context.Background(), dir, []string{"0"}, 3, func(int) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ReadEpochs whose after fails: %v, want its error", err)
	}
	if _, err := ReadEpochs(context.Background(), dir, []string{"nosuch"}, 2, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadEpochs of a missing file: %v", err)
	}
}

func TestGBps(t *testing.T) {
	if got := GBps(3e9, 2); got != 1.5 {
		t.Errorf("GBps(3e9, 2) = %v", got)
	}
}

func TestWarmDir(t *testing.T) {
	if err := WarmDir(files(t, 10, 1<<20)); err != nil {
		t.Error(err)
	}
	if err := WarmDir(filepath.Join(t.TempDir(), "nosuch")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WarmDir of nothing: %v", err)
	}
}

// BenchmarkReadFiles: the file tool's rate over 1 MiB files in the page
// cache, the ceiling of the bench's raw cells on this machine.
func BenchmarkReadFiles(b *testing.B) {
	dir := files(b, 1<<20, 1<<20, 1<<20, 1<<20)
	names := []string{"0", "1", "2", "3"}
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadFiles(context.Background(), dir, names); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMeasureMemCost(t *testing.T) {
	c, err := MeasureMemCost(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if c.First <= 0 || c.Again <= 0 {
		t.Fatalf("MeasureMemCost = %+v: want both passes timed", c)
	}
	if s := c.String(); !strings.Contains(s, "8 MiB touched") {
		t.Errorf("String() = %q", s)
	}
}
