// Package warmup reads the chunk files of arrays through a zfuse mount
// ahead of a job, so that the mount decodes them into its caches and the
// kernel keeps them in its page cache (zfuse warmup).
//
// The one fact to know: it works from the presented metadata, as any
// reader does, and opens chunk files by name (an HTTP mount lists none):
// Find and Slice say which files, Warmer reads them, Resident says how
// much of them the page cache holds afterwards.
package warmup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zfuse/zfuse/internal/mountinfo"
	"github.com/zfuse/zfuse/zarr"
)

// An Array is an array to warm: its directory in the mount, its presented
// metadata and the range of chunk coordinates, Lo[i] <= c[i] < Hi[i].
type Array struct {
	Dir    string
	Meta   *zarr.Array
	Lo, Hi []int
}

// Files lists the array's chunk files in chunk-grid (C) order, the order
// readahead recognises.
func (w Array) Files() []string {
	var out []string
	zarr.EachC(w.Lo, w.Hi, func(c []int) bool {
		out = append(out, filepath.Join(w.Dir, filepath.FromSlash(w.Meta.ChunkKey(c))))
		return true
	})
	return out
}

// open reads the presented metadata of the array at dir: .zarray, or a
// zarr.json describing an array. ok is false for anything else.
func open(dir string) (w Array, ok bool, err error) {
	var a *zarr.Array
	if b, err := os.ReadFile(filepath.Join(dir, zarr.ArrayFile)); err == nil {
		if a, err = zarr.ParseV2(b); err != nil {
			return w, false, fmt.Errorf("%s: %w", dir, err)
		}
	} else if b, err := os.ReadFile(filepath.Join(dir, zarr.MetadataFile)); err == nil {
		if a, _, err = zarr.ParseV3(b); err != nil {
			return w, false, fmt.Errorf("%s: %w", dir, err)
		}
	}
	if a == nil {
		return w, false, nil
	}
	return Array{Dir: dir, Meta: a, Lo: make([]int, len(a.Grid())), Hi: slices.Clone(a.Grid())}, true, nil
}

// Find returns the array at root, or every array under it, skipping those
// the mount passes through undecoded.
func Find(root string) ([]Array, error) {
	var out []Array
	var walk func(dir string) error
	walk = func(dir string) error {
		w, ok, err := open(dir)
		if err != nil || ok {
			if ok && w.Meta.PassThrough == nil {
				out = append(out, w)
			}
			return err
		}
		des, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, de := range des {
			if de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
				if err := walk(filepath.Join(dir, de.Name())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, fmt.Errorf("warmup: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("warmup: %s holds no Zarr array that the mount decodes (no .zarray or zarr.json of one below it)", root)
	}
	return out, nil
}

// Slice returns the array and chunk range that expr (--slice: NAME[SEL],
// zarr.ParseSlice) names under root.
func Slice(root, expr string) (Array, error) {
	name, sel, err := zarr.ParseSlice(expr)
	if err != nil {
		return Array{}, fmt.Errorf("--slice: %w", err)
	}
	dir := filepath.Join(root, filepath.FromSlash(name))
	w, ok, err := open(dir)
	switch {
	case err != nil:
		return w, fmt.Errorf("warmup: %w", err)
	case !ok:
		return w, fmt.Errorf("--slice: %s is not an array (no .zarray or zarr.json)", dir)
	case w.Meta.PassThrough != nil:
		return w, fmt.Errorf("--slice: %s is passed through undecoded: %v", dir, w.Meta.PassThrough)
	}
	w.Lo, w.Hi, err = zarr.ChunkRange(w.Meta.Shape, w.Meta.Chunks, sel)
	if err != nil {
		return w, fmt.Errorf("--slice %s: %w", expr, err)
	}
	return w, nil
}

// OnMount refuses a path that is not on a zfuse mount (the file system of
// the deepest mount point at or above it, in /proc/self/mountinfo, is not
// fuse.zfuse, or plain fuse, as a parent that mounted /dev/fuse for zfuse
// mount /dev/fd/N may have named it): warming a store itself would fill
// the page cache with its compressed files and decode nothing. The path
// is a live one, so its symlinks are resolved, all of them.
func OnMount(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return nil // no mount table to ask: let the reads tell
	}
	m, ok := mountinfo.Containing(ms, abs)
	switch {
	case !ok, m.FSType == "fuse.zfuse", m.FSType == "fuse":
		return nil
	}
	return fmt.Errorf("warmup: %s is not on a zfuse mount (it is on %s, a %s file system): warmup reads chunk files through a mount so that the mount decodes them into its caches; mount the store (zfuse mount SOURCE MOUNTPOINT) and warm MOUNTPOINT or a path under it", p, m.MountPoint, m.FSType)
}

// A Warmer reads files whole, jobs at a time, counting as it goes. Its
// counts are safe to read while it runs.
type Warmer struct {
	files []string
	jobs  int

	done, missing, bytes atomic.Int64
	mu                   sync.Mutex
	failed               []error
}

// New returns a Warmer of files, reading jobs of them at once.
func New(files []string, jobs int) *Warmer { return &Warmer{files: files, jobs: max(jobs, 1)} }

// Files is how many files it reads; Done how many it has read (or found
// missing, or failed), Missing those missing (chunks readers read as the
// fill value), Bytes the bytes read so far.
func (w *Warmer) Files() int     { return len(w.files) }
func (w *Warmer) Done() int64    { return w.done.Load() }
func (w *Warmer) Missing() int64 { return w.missing.Load() }
func (w *Warmer) Bytes() int64   { return w.bytes.Load() }

// Failed returns the errors of the files that did not read.
func (w *Warmer) Failed() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.failed)
}

// Run reads the files, until all are read or ctx ends.
func (w *Warmer) Run(ctx context.Context) {
	next := make(chan string)
	var wg sync.WaitGroup
	for range min(w.jobs, len(w.files)) {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for p := range next {
				w.read(p, buf)
			}
		})
	}
	for _, p := range w.files {
		select {
		case next <- p:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
}

// read reads the file at p to its end, len(buf) bytes at a time, as a
// reader of chunk files does, and counts it.
func (w *Warmer) read(p string, buf []byte) {
	defer w.done.Add(1)
	f, err := os.Open(p)
	for err == nil {
		var n int
		n, err = f.Read(buf)
		w.bytes.Add(int64(n))
	}
	if f != nil {
		f.Close()
	}
	switch {
	case errors.Is(err, io.EOF):
	case errors.Is(err, fs.ErrNotExist):
		w.missing.Add(1) // a missing chunk: readers use the fill value
	default:
		w.mu.Lock()
		w.failed = append(w.failed, err)
		w.mu.Unlock()
	}
}
