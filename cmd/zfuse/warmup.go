package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/metrics"
	"github.com/zfuse/zfuse/warmup"
)

// runWarmup is zfuse warmup: it reads the chunk files of an array, of
// every array under a group, or of a slice of an array, through a zfuse
// mount (package warmup), so that the mount decodes them into its caches
// ahead of a job. A path that is not on a zfuse mount is refused: reading
// a store itself decodes nothing. The summary says where the bytes read
// are: how much of them the page cache holds (mincore), where later reads
// find them without asking zfuse, and, given the mount's --metrics
// address, its serving path and what each tier of the mount holds (under
// no-open a chunk leaves the decoded tier once the kernel has all of it;
// under passthrough the decoded tier's memfds are what the kernel reads).
func runWarmup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
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
	if err := warmup.OnMount(root); err != nil {
		return err
	}
	arrays, err := warmArrays(root, *slice)
	if err != nil {
		return err
	}
	var files []string
	for _, a := range arrays {
		files = append(files, a.Files()...)
	}
	if len(files) == 0 {
		return fmt.Errorf("warmup: no chunks under %s", root)
	}
	w := warmup.New(files, int(jobs))
	start := time.Now()
	stop := func() {}
	if progress {
		stop = showWarmup(stderr, w)
	}
	w.Run(ctx)
	stop()
	took := time.Since(start)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("warmup interrupted after %d of %d chunk files: %w", w.Done(), len(files), err)
	}
	return warmReport(ctx, stdout, w, files, root, len(arrays), took, *metricsAddr)
}

// warmArrays returns the arrays to warm under root: the slice expr names,
// or every array.
func warmArrays(root, expr string) ([]warmup.Array, error) {
	if expr == "" {
		return warmup.Find(root)
	}
	a, err := warmup.Slice(root, expr)
	return []warmup.Array{a}, err
}

// showWarmup draws a progress bar of w on out until stop is called.
func showWarmup(out io.Writer, w *warmup.Warmer) (stop func()) {
	start := time.Now()
	state := func() (float64, string) {
		done, n := w.Done(), w.Files()
		mbs := float64(w.Bytes()) / max(time.Since(start).Seconds(), 1e-3) / 1e6
		return float64(done) / float64(n), fmt.Sprintf("%3d%% %d/%d chunk files, %s, %.0f MB/s",
			100*done/int64(n), done, n, bytesize.Format(w.Bytes()), mbs)
	}
	return startProgress(out, "bar", "warmup", "", "=", state).stop
}

// warmReport prints the summary, and fails if some chunk files did not
// read.
func warmReport(ctx context.Context, out io.Writer, w *warmup.Warmer, files []string, root string, arrays int, took time.Duration, metricsAddr string) error {
	failed := w.Failed()
	n := int64(len(files))
	fmt.Fprintf(out, "warmed %s: %d chunk files of %d array%s, %s read (%d missing: fill value) in %v, %.0f MB/s\n",
		root, n-w.Missing()-int64(len(failed)), arrays, plural(arrays), bytesize.Format(w.Bytes()), w.Missing(),
		took.Round(time.Millisecond), float64(w.Bytes())/took.Seconds()/1e6)
	if held, f, err := warmup.Resident(files); err == nil {
		fmt.Fprintf(out, "page cache: %s of them resident (%.1f%% of those files' pages): reads of those need nothing from zfuse\n",
			bytesize.Format(held), 100*f)
	}
	if metricsAddr != "" {
		t, err := metrics.Scrape(ctx, metricsAddr)
		if err != nil {
			fmt.Fprintf(out, "mount caches: unknown (%v)\n", err)
		} else {
			fmt.Fprintf(out, "mount caches%s\n", tiersLine(t))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("warmup: %d chunk files did not read; the first: %w", len(failed), failed[0])
	}
	return nil
}

// tiersLine shows the mount's serving path and what each tier holds, as
// " (serving no-open: ...): decoded 0 B of 1 GiB, ...".
func tiersLine(t metrics.Tiers) string {
	var b strings.Builder
	switch t.Serving {
	case "passthrough":
		b.WriteString(" (serving passthrough: the decoded tier's memfds are what the kernel reads):")
	case "":
		b.WriteString(":")
	default:
		fmt.Fprintf(&b, " (serving %s: a chunk leaves the decoded tier once the page cache holds all of it):", t.Serving)
	}
	for _, tier := range []string{"decoded", "readahead", "compressed", "disk"} {
		if v, ok := t.Held[tier]; ok {
			fmt.Fprintf(&b, " %s %s of %s,", tier, bytesize.Format(int64(v)), bytesize.Format(int64(t.Budget[tier])))
		}
	}
	return strings.TrimSuffix(b.String(), ",")
}
