package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/bench"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/zarr"
)

// zfuse warmup reads the chunk files of an array, of every array under a
// group, or of a slice of an array, through a zfuse mount, so that the
// mount decodes them into its caches (and the kernel keeps them in its page
// cache) ahead of a job. It works from the presented metadata, as any
// reader does: chunk files are opened by name (an HTTP mount lists none).
// A path that is not on a zfuse mount is refused: reading a store itself
// decodes nothing. The summary says where the bytes read are: how much of
// them the page cache holds (mincore), where later reads find them without
// asking zfuse, and, given the mount's --metrics address, its serving path
// and what each tier of the mount holds (under no-open a chunk leaves the
// decoded tier once the kernel has all of it; under passthrough the
// decoded tier's memfds are what the kernel reads).
func warmup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse warmup", flag.ContinueOnError)
	slice := fl.String("slice", "", "warm only this slice: `NAME[SEL]`, NAME an array under the path (or nothing for the path itself), SEL numpy-style indices and start:stop ranges per dimension, e.g. 't2m[0:100]' or '[0:10, :, 5]'")
	jobs := countFlag(8)
	fl.Var(&jobs, "jobs", "chunk files read at once")
	metricsAddr := fl.String("metrics", "", "the mount's --metrics `ADDR`, to report what its caches hold afterwards")
	progress := boolFlag(isTerminal(stderr))
	fl.Var(&progress, "progress", "show a progress bar on stderr (default: when stderr is a terminal)")
	if err := parseFlags(fl, args, 1, stdout); err != nil { // usage.go: help to stdout, bad usage exits 2
		return err
	}
	root := fl.Arg(0)
	if err := onZfuseMount(root); err != nil {
		return err
	}
	var arrays []warmArray
	var err error
	if *slice != "" {
		var a warmArray
		a, err = sliceArray(root, *slice)
		arrays = []warmArray{a}
	} else {
		arrays, err = findArrays(root)
	}
	if err != nil {
		return err
	}
	var files []string
	for _, a := range arrays {
		files = append(files, a.files()...)
	}
	if len(files) == 0 {
		return fmt.Errorf("warmup: no chunks under %s", root)
	}
	w := &warmer{files: files}
	start := time.Now()
	stop := func() {}
	if progress {
		stop = w.showProgress(stderr)
	}
	w.run(ctx, int(jobs))
	stop()
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("warmup interrupted after %d of %d chunk files: %w", w.done.Load(), len(files), err)
	}
	return w.report(stdout, root, len(arrays), took, *metricsAddr)
}

// A warmArray is an array to warm: its directory in the mount, its
// presented metadata and the range of chunk coordinates, lo[i] <= c[i] <
// hi[i].
type warmArray struct {
	dir    string
	a      *zarr.Array
	lo, hi []int
}

// files lists the array's chunk files in chunk-grid (C) order, the order
// readahead recognises.
func (w warmArray) files() []string {
	var out []string
	zarr.EachC(w.lo, w.hi, func(c []int) bool {
		out = append(out, filepath.Join(w.dir, filepath.FromSlash(w.a.ChunkKey(c))))
		return true
	})
	return out
}

// openArray reads the presented metadata of the array at dir: .zarray, or
// a zarr.json describing an array. ok is false for anything else.
func openArray(dir string) (w warmArray, ok bool, err error) {
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
	w = warmArray{dir: dir, a: a, lo: make([]int, len(a.Grid())), hi: slices.Clone(a.Grid())}
	return w, true, nil
}

// findArrays returns the array at root, or every array under it, skipping
// those passed through undecoded.
func findArrays(root string) ([]warmArray, error) {
	var out []warmArray
	var walk func(dir string) error
	walk = func(dir string) error {
		w, ok, err := openArray(dir)
		if err != nil {
			return err
		}
		if ok {
			if w.a.PassThrough == nil {
				out = append(out, w)
			}
			return nil
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

// onZfuseMount refuses a path that is not on a zfuse mount (the file
// system of the deepest mount point at or above it, in
// /proc/self/mountinfo, is not fuse.zfuse, or plain fuse, as a parent
// that mounted /dev/fuse for zfuse mount /dev/fd/N may have named it):
// warming a store itself would fill the page cache with its compressed
// files and decode nothing.
func onZfuseMount(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for d := abs; ; d = filepath.Dir(d) {
		m := mountOf(d) // mountpoint.go
		switch {
		case m.FSType == "fuse.zfuse" || m.FSType == "fuse":
			return nil
		case m.FSType != "":
			return fmt.Errorf("warmup: %s is not on a zfuse mount (it is on %s, a %s file system): warmup reads chunk files through a mount so that the mount decodes them into its caches; mount the store (zfuse mount SOURCE MOUNTPOINT) and warm MOUNTPOINT or a path under it", p, d, m.FSType)
		case d == filepath.Dir(d):
			return nil // no mount table to ask: let the reads tell
		}
	}
}

// sliceArray returns the array and chunk range that --slice names under
// root.
func sliceArray(root, expr string) (warmArray, error) {
	name, sel, err := zarr.ParseSlice(expr)
	if err != nil {
		return warmArray{}, fmt.Errorf("--slice: %w", err)
	}
	dir := filepath.Join(root, filepath.FromSlash(name))
	w, ok, err := openArray(dir)
	switch {
	case err != nil:
		return w, fmt.Errorf("warmup: %w", err)
	case !ok:
		return w, fmt.Errorf("--slice: %s is not an array (no .zarray or zarr.json)", dir)
	case w.a.PassThrough != nil:
		return w, fmt.Errorf("--slice: %s is passed through undecoded: %v", dir, w.a.PassThrough)
	}
	w.lo, w.hi, err = zarr.ChunkRange(w.a.Shape, w.a.Chunks, sel)
	if err != nil {
		return w, fmt.Errorf("--slice %s: %w", expr, err)
	}
	return w, nil
}

// A warmer reads files with bounded parallelism, counting as it goes.
type warmer struct {
	files []string

	done, missing, bytes atomic.Int64
	mu                   sync.Mutex
	failed               []error
}

func (w *warmer) run(ctx context.Context, jobs int) {
	next := make(chan string)
	var wg sync.WaitGroup
	for range min(jobs, len(w.files)) {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for p := range next {
				n, err := bench.ReadFile(p, buf)
				w.bytes.Add(n)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					w.missing.Add(1) // a missing chunk: readers use the fill value
				case err != nil:
					w.mu.Lock()
					w.failed = append(w.failed, err)
					w.mu.Unlock()
				}
				w.done.Add(1)
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

// showProgress draws a progress bar on w until stop is called.
func (w *warmer) showProgress(out io.Writer) (stop func()) {
	start := time.Now()
	draw := func(_ time.Time, final bool) {
		done, n := w.done.Load(), len(w.files)
		mbs := float64(w.bytes.Load()) / max(time.Since(start).Seconds(), 1e-3) / 1e6
		fmt.Fprintf(out, "\r%s %3d%% %d/%d chunk files, %s, %.0f MB/s ",
			bar(float64(done)/float64(n), 30, "="), 100*done/int64(n), done, n,
			bytesize.Format(w.bytes.Load()), mbs)
		if final {
			fmt.Fprintln(out)
		}
	}
	return startRedraw(200*time.Millisecond, draw).stop
}

// report prints the summary, and fails if some chunk files did not read.
func (w *warmer) report(out io.Writer, root string, arrays int, took time.Duration, metricsAddr string) error {
	n := int64(len(w.files))
	fmt.Fprintf(out, "warmed %s: %d chunk files of %d array%s, %s read (%d missing: fill value) in %v, %.0f MB/s\n",
		root, n-w.missing.Load()-int64(len(w.failed)), arrays, plural(arrays), bytesize.Format(w.bytes.Load()), w.missing.Load(),
		took.Round(time.Millisecond), float64(w.bytes.Load())/took.Seconds()/1e6)
	if held, f, err := resident(w.files); err == nil {
		fmt.Fprintf(out, "page cache: %s of them resident (%.1f%% of those files' pages): reads of those need nothing from zfuse\n",
			bytesize.Format(held), 100*f)
	}
	if metricsAddr != "" {
		tiers, err := mountTiers(metricsAddr)
		if err != nil {
			fmt.Fprintf(out, "mount caches: unknown (%v)\n", err)
		} else {
			fmt.Fprintf(out, "mount caches%s\n", tiers)
		}
	}
	if len(w.failed) > 0 {
		return fmt.Errorf("warmup: %d chunk files did not read; the first: %w", len(w.failed), w.failed[0])
	}
	return nil
}

// mountTiers returns the mount's serving path and what each tier of it
// holds, from its metrics (zfuse_serving_path_info, zfuse_cache_bytes and
// zfuse_cache_budget_bytes), as " (serving no-open: ...): decoded 0 B of
// 1 GiB, ...".
func mountTiers(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/metrics: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return "", err
	}
	byTier := func(name string) map[string]float64 {
		m := map[string]float64{}
		if f := fams[name]; f != nil {
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if l.GetName() == "tier" {
						m[l.GetValue()] = s.GetGauge().GetValue()
					}
				}
			}
		}
		return m
	}
	held, budget := byTier("zfuse_cache_bytes"), byTier("zfuse_cache_budget_bytes")
	if len(held) == 0 {
		return "", fmt.Errorf("%s/metrics has no zfuse_cache_bytes: is it a zfuse mount's --metrics address?", addr)
	}
	var b strings.Builder
	serving := ""
	if f := fams["zfuse_serving_path_info"]; f != nil {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "path" && s.GetGauge().GetValue() == 1 {
					serving = l.GetValue()
				}
			}
		}
	}
	switch serving {
	case "passthrough":
		b.WriteString(" (serving passthrough: the decoded tier's memfds are what the kernel reads):")
	case "":
		b.WriteString(":")
	default:
		fmt.Fprintf(&b, " (serving %s: a chunk leaves the decoded tier once the page cache holds all of it):", serving)
	}
	for _, t := range []string{"decoded", "readahead", "compressed", "disk"} {
		if v, ok := held[t]; ok {
			fmt.Fprintf(&b, " %s %s of %s,", t, bytesize.Format(int64(v)), bytesize.Format(int64(budget[t])))
		}
	}
	return strings.TrimSuffix(b.String(), ","), nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// resident returns the bytes of files in the page cache and the fraction
// of their pages that is (mincore over a read-only mapping of each);
// missing files, chunks read as their fill value, have none.
func resident(files []string) (int64, float64, error) {
	var in, all int
	var held int64
	for _, p := range files {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a missing chunk: its fill value, no pages
		}
		if err != nil {
			return 0, 0, err
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			f.Close()
			continue
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
		unix.Munmap(m)
		if errno != 0 {
			return 0, 0, errno
		}
		page := int64(os.Getpagesize())
		for i, v := range vec {
			if v&1 != 0 {
				in++
				held += min(page, fi.Size()-int64(i)*page) // the last page holds the file's end
			}
		}
		all += len(vec)
	}
	if all == 0 {
		return 0, 0, nil
	}
	return held, float64(in) / float64(all), nil
}
