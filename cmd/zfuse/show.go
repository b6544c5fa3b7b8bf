package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/zfuse/zfuse/compress"
	"github.com/zfuse/zfuse/fusemount"
	"github.com/zfuse/zfuse/internal/bytesize"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// cat writes exactly the bytes the mount serves at p, a MiB at a time (a
// whole .npy file need not fit in memory).
func cat(ctx context.Context, stdout io.Writer, tr *tree.Tree, p string) error {
	_, err := tr.CopyFile(ctx, stdout, p)
	switch {
	case errors.Is(err, store.ErrOutside):
		return fmt.Errorf("cat %s: refused: a path inside the store, relative to its root and without \"..\", is required (%w)", p, err)
	case errors.Is(err, tree.ErrNotStored):
		return fmt.Errorf("cat %s: no such file: the chunk is not stored, and readers read it as the array's fill value", p)
	}
	if err != nil {
		return fmt.Errorf("cat %s: %w", p, err)
	}
	return nil
}

// viewFlag names the flag of the view a tree presents, "" for the default.
func viewFlag(asV2, asNpy, asNc bool) string {
	switch {
	case asV2:
		return "--as-v2"
	case asNpy:
		return "--as-npy"
	case asNc:
		return "--as-nc"
	}
	return ""
}

// info prints one line per array: how it is stored and how it is
// presented. FORMAT is the stored format ("v3->v2" for a v3 array under
// --as-v2, "v2+v3" for a directory holding both .zarray and zarr.json,
// presented as v2, where PRESENTED also says what is served of zarr.json);
// a sharded v3 array is presented unsharded, so CHUNKS is its inner chunk
// shape and SHARDS the stored one; DECODER says what decodes its chunks
// (dec's choice, and why) and how a sharded array's inner chunks are read.
//
// SOURCE (source) holding no array is an error that says what it holds
// (noArrays). Over HTTP, which cannot list chunk keys, STORED says "not
// listed" rather than counting none. Under --as-npy (view), PRESENTED
// names the array's .npy file, or says why the array is not shown; under
// --as-nc, the netCDF file and variable that hold it, or why it is left
// out, and a second table lists each group's file, its format (CDF-2 or
// CDF-5), variables and size. Under --layout native, PRESENTED says so
// of the arrays it relays.
//
// Two last lines say which serving path and transport zfuse mount would
// use on this machine (printMount).
func info(ctx context.Context, stdout io.Writer, tr *tree.Tree, dec *decoders, serving fusemount.Serving, transport fusemount.Transport, source, view string) error {
	arrays, err := tr.Arrays(ctx)
	if err != nil {
		return err
	}
	if len(arrays) == 0 {
		return noArrays(tr.NoArray(ctx), source)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PATH\tFORMAT\tSHAPE\tCHUNKS\tSHARDS\tDTYPE\tCODECS\tDECODER\tSTORED\tRATIO\tPRESENTED")
	for _, in := range arrays {
		fmt.Fprintln(w, strings.Join(infoRow(in, dec, source, view), "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := ncInfo(ctx, stdout, tr); err != nil {
		return err
	}
	return printMount(stdout, serving, transport)
}

// infoRow returns the cells of info's line of the array in, of SOURCE
// source presented in view (viewFlag).
func infoRow(in tree.ArrayInfo, dec *decoders, source, view string) []string {
	shape, chunks, shards, dtype, codecs := "?", "?", "-", "?", "?"
	format := "v" + strconv.Itoa(in.Format)
	if a := in.Array; a != nil {
		shape, chunks, dtype, codecs = compress.Dims(a.Shape), compress.Dims(a.Chunks), a.DType, a.Codecs
		if a.Format == 3 {
			dtype = a.DataType
		}
		if in.Format == 3 && a.Format == 2 {
			format = "v3->v2"
		}
	}
	if in.Shards != nil {
		shards = compress.Dims(in.Shards)
	}
	stored := fmt.Sprintf("%d chunks, %s", in.Chunks, bytesize.Format(in.Stored))
	ratio := "-" // passed-through arrays are served as stored
	switch {
	case store.Backend(source) == "http": // it cannot list chunk keys
		stored = "not listed"
	case in.Stored > 0 && in.PassThrough == nil:
		ratio = fmt.Sprintf("%.2f", float64(in.Presented)/float64(in.Stored))
	}
	how, decoder := "raw", decoderOf(in.Array, dec)
	switch {
	case in.Unreadable != nil:
		format, stored, how = "?", "?", "metadata could not be read: "+in.Unreadable.Error()
	case in.Hidden != nil:
		how, decoder = "not shown ("+view+"): "+in.Hidden.Error(), "-"
	case in.Npy != "":
		how = "raw, as " + in.Npy
	case in.Nc != "":
		how = fmt.Sprintf("raw, as %s variable %s (%s)", in.Nc, in.NcVar, in.NcType)
	case in.Array != nil && in.Array.Relaid():
		how = "raw, relaid (--layout native): order C, " + in.Array.DType
	case in.PassThrough != nil:
		how, decoder = "passed through: "+in.PassThrough.Error(), "-"
	}
	if in.ZarrJSON != "" { // a zarr.json beside the .zarray
		format, how = "v2+v3", how+"; zarr.json "+in.ZarrJSON
	}
	return []string{in.Path, format, shape, chunks, shards, dtype, codecs, decoder, stored, ratio, how}
}

// printMount writes zfuse info's lines of the serving path and transport
// zfuse mount would use on this machine (fusemount.ProbeMount mounts an
// empty file system to ask the kernel), and why not the ones asked for.
func printMount(stdout io.Writer, serving fusemount.Serving, transport fusemount.Transport) error {
	p, err := fusemount.ProbeMount("", serving, transport)
	fmt.Fprintln(stdout)
	if err != nil {
		_, err = fmt.Fprintf(stdout, "serving path (zfuse mount --serving %s): unknown: %v\n", serving, err)
		return err
	}
	fmt.Fprintf(stdout, "serving path (zfuse mount --serving %s): %s%s\n", serving, p.Serving, because(p.ServingWhy))
	_, err = fmt.Fprintf(stdout, "transport (zfuse mount --transport %s): %s%s\n", transport, p.Transport, because(p.TransportWhy))
	return err
}

// because is " (why)", or "" when there is no why.
func because(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

// decoderOf says what decodes a's chunks and why, as the loader decides
// it (readahead.RouteOf): the router's choice ("gpu: blosc lz4 shuffle",
// "cpu: zstd has no GPU kernel", "cpu: no GPU"), or "none: stored
// uncompressed" for chunks served as stored. For a sharded array it adds
// whether an inner chunk is read by range (its shard's index cached:
// "cpu,inner-by-range: ...") or needs its whole shard (codecs over the
// whole shard, which the CPU undoes chunk by chunk: "cpu,whole-shard").
// "-" where there is no array to decode.
func decoderOf(a *zarr.Array, dec *decoders) string {
	if a == nil || a.Decoder() == nil {
		return "-"
	}
	return readahead.RouteOf(a, dec.route).String()
}

// ncInfo prints, under --as-nc, one line per netCDF file: its path, the
// group it presents, its format and size, and its variables.
func ncInfo(ctx context.Context, stdout io.Writer, tr *tree.Tree) error {
	files, err := tr.NcFiles(ctx)
	if err != nil || len(files) == 0 {
		return err
	}
	fmt.Fprintln(stdout)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FILE\tGROUP\tFORMAT\tSIZE\tVARIABLES")
	for _, f := range files {
		vars := strings.Join(f.Vars, " ")
		if vars == "" {
			vars = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s (%s)\t%s\t%s\n", f.Path, f.Group, f.Format, f.Format.Describe(), bytesize.Format(f.Size), vars)
	}
	return w.Flush()
}
