package floor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/testutil"
)

// TestServe mounts the floor over a store of three chunk
// files of different sizes and its metadata: the floor lists the same
// names with the same sizes,
// serves the metadata as stored and every chunk file from the bytes of
// the largest, refuses writes, says it serves in no-open mode where the
// kernel offers it, and unmounts when its context ends.
func TestServe(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts are not short")
	}
	testutil.NeedFUSE(t)
	store := t.TempDir()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	files := map[string][]byte{".zarray": []byte(`{"zarr_format": 2}`), ".zattrs": []byte("{}"),
		"0.0": chunk[:1000], "0.1": bytes.ToUpper(chunk), "1.0": chunk[:5000]}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(store, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	log, logs := testutil.Logger()
	exited, ready := make(chan struct{}), make(chan struct{})
	var err error
	go func() {
		err = Serve(ctx, store, mnt, Config{KernelReadahead: 4 << 20, Log: log, Ready: func() { close(ready) }})
		close(exited)
	}()
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("the floor did not mount: %v\n%s", err, logs.String())
	}
	defer func() {
		cancel()
		<-exited
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		if ok, _ := fusemount.Mounted(mnt); ok {
			t.Errorf("%s still mounted after the floor returned", mnt)
		}
	}()

	es, rerr := os.ReadDir(mnt)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if want := []string{".zarray", ".zattrs", "0.0", "0.1", "1.0"}; !slices.Equal(names, want) {
		t.Errorf("the floor lists %q, want %q", names, want)
	}
	// The largest file's bytes, read at the start, are every chunk's.
	largest := files["0.1"]
	for name, want := range map[string][]byte{".zarray": files[".zarray"], ".zattrs": files[".zattrs"],
		"0.0": largest[:1000], "0.1": largest, "1.0": largest[:5000]} {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want %d bytes: the stored metadata, or the largest chunk's bytes", name, len(got), err, len(want))
		}
		if fi, err := os.Stat(filepath.Join(mnt, name)); err != nil || fi.Size() != int64(len(want)) || fi.Mode() != 0o444 {
			t.Errorf("%s: stat %v, %v; want size %d, -r--r--r--", name, fi, err, len(want))
		}
	}
	if _, err := os.OpenFile(filepath.Join(mnt, "0.0"), os.O_WRONLY, 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("opening for writing: %v, want EROFS", err)
	}
	want := "serving=open"
	if p, err := fusemount.ProbeMount("", fusemount.NoOpen, fusemount.TransportAuto); err == nil && p.Serving == fusemount.NoOpen {
		want = "serving=no-open"
	}
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the floor's log does not say %s:\n%s", want, logs.String())
	}
}

// TestReadFiles: the floor refuses a store with a subdirectory (it serves
// one array), and serves an empty one.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readFiles(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a store with a subdirectory: %v", err)
	}
	if fs, err := readFiles(t.TempDir()); err != nil || len(fs) != 0 {
		t.Errorf("an empty store: %v, %v", fs, err)
	}
}
