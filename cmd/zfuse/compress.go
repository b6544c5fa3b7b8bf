package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/fs"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/store"
	s3store "github.com/zfuse/zfuse/store/s3"
	"github.com/zfuse/zfuse/zarr"
)

// zfuse compress [flags] SOURCE DEST: read every array of SOURCE decoded
// (anything zfuse mounts), encode its chunks on every core, and write a
// Zarr store to DEST, a local directory or an S3 prefix. This file is the
// command: flags, the checks on DEST, and the plan (what each array
// becomes); the copy itself is in compress_copy.go, where it writes in
// compress_dest.go, its records in compress_record.go, the split of a job
// among processes (--part) in compress_split.go and --finish in
// compress_finish.go, progress and summary in compress_report.go.

const compressUsage = `Read every array of SOURCE (a directory, http(s):// or s3://; any codec, Zarr v2
or v3, sharded or not), encode its chunks on every core, and write a Zarr store
to DEST, a local directory or s3://bucket/prefix, which must not exist, or be
empty (or be an interrupted run's DEST, with --resume). Groups, attributes,
fill values, dimension names and consolidated metadata carry over; arrays that
cannot be encoded (object dtypes, codecs zfuse cannot decode) are copied as
stored.

--codec is a comma-separated list, filters first:
  blosc[:CNAME[:CLEVEL[:SHUFFLE[:BLOCKSIZE]]]]   CNAME lz4 lz4hc blosclz zlib zstd; SHUFFLE
                                                 noshuffle shuffle bitshuffle auto (default blosc:lz4:5:shuffle)
  zstd[:LEVEL]  lz4[:ACCELERATION]  gzip[:LEVEL]  zlib[:LEVEL]  none
  delta, shuffle                                 filters (delta: integer arrays only)

One job on many processes or machines: run "zfuse compress --part K/N SOURCE DEST"
for K = 0 to N-1, at once or not, each writing its share of the chunks and no
metadata (add --resume to continue a part that stopped); then
"zfuse compress --finish SOURCE DEST" checks that every part wrote its whole share
with the same settings, writes the metadata and prints the job's summary.`

// compressFlags are zfuse compress's own flags.
type compressFlags struct {
	codec      string
	format     string
	chunks     string
	shard      string
	workers    int
	decoder    gpu.Mode
	encoder    string
	writeEmpty bool
	resume     bool
	verify     bool
	memory     Size
	progress   string
	logLevel   string
	cpuProfile string
	part       string // --part K/N
	finish     bool
}

func addCompressFlags(fl *flag.FlagSet) *compressFlags {
	f := &compressFlags{decoder: gpu.Auto, memory: 1 << 30}
	fl.StringVar(&f.codec, "codec", "blosc:lz4:5:shuffle", "the codecs of every array written, e.g. blosc:lz4:5:shuffle, zstd:3, lz4, gzip:6, delta,zstd:1, none (see above)")
	fl.StringVar(&f.format, "format", "keep", "Zarr format written: v2, v3, or keep each array's")
	fl.StringVar(&f.chunks, "chunks", "keep", "chunk shape written (for sharded v3, the inner chunks): keep, or a shape like 1x512x512 for arrays of that rank (-1: the whole axis); rechunking reads the source chunks each new chunk needs")
	fl.StringVar(&f.shard, "shard", "keep", "v3 sharding: keep (a sharded source's shard shape), none, a size such as 64MiB (each array gets a shard of whole chunks per axis within it), or chunks per axis like 2x2x2 for arrays of that rank")
	fl.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "CPU workers decoding and encoding chunks")
	fl.Var((*modeFlag)(&f.decoder), "decoder", "which decoder reads LZ4 and Blosc-LZ4 source chunks, `auto|cpu|gpu`, as for mount")
	fl.StringVar(&f.encoder, "encoder", "auto", "which encoder writes chunks, `auto|cpu|gpu`: zfuse has no GPU encoder yet, so auto is the CPU pool and gpu is refused")
	fl.BoolVar(&f.writeEmpty, "write-empty", false, "also write chunks whose every element is the fill value (by default they are left out, as zarr-python does, and read back as the fill value)")
	fl.BoolVar(&f.resume, "resume", false, "continue an interrupted run into the same DEST: chunks already written with the same settings are kept")
	fl.BoolVar(&f.verify, "verify", false, "read every chunk written back from DEST, decode it and compare it with the source")
	fl.Var(&f.memory, "memory", "bound on the chunk bytes in flight (read, encoded, being written), e.g. 512MiB")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (a bar on a terminal, plain lines otherwise), bar, plain, none")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the run to this file, for go tool pprof")
	fl.StringVar(&f.part, "part", "", "write only share K of N (K from 0, e.g. 2/8) of the chunks and no metadata, so that N processes on any machines write one DEST at once; then --finish")
	fl.BoolVar(&f.finish, "finish", false, "once every --part K/N of the job has run: check that each wrote its whole share with the same settings, write the metadata and print the job's summary")
	return f
}

// compress is the zfuse compress command.
func compress(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse compress", flag.ContinueOnError)
	f := addCompressFlags(fl)
	sf := addSourceFlags(fl)
	if err := parseFlags(fl, args, 2, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "\n%s\n", compressUsage)
		}
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	var prt part
	if f.part != "" {
		var err error
		if prt, err = parsePart(f.part); err != nil {
			return badUsage("compress", "%w", err)
		}
	}
	if f.finish && (prt.n > 0 || f.verify) {
		return badUsage("compress", "--finish writes no chunk: --part and --verify belong on the parts")
	}
	source, dest := fl.Arg(0), fl.Arg(1)
	if err := checkDest(source, dest); err != nil {
		return err
	}
	dst, err := openDest(ctx, dest, sf, log)
	if err != nil {
		return err
	}
	defer dst.Close()
	held, err := readDest(ctx, dst)
	if err != nil {
		return err
	}
	if err := checkHolds(dest, held, prt, f.finish, f.resume); errors.Is(err, errFinished) {
		fmt.Fprintf(stderr, "zfuse compress: DEST %s holds the finished store already (no part records left): nothing to do\n", dest)
		return nil
	} else if err != nil {
		return err
	}
	if err := takeSettings(fl, dest, held, prt, f.resume || f.finish, log); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	lf := &loaderFlags{workers: max(f.workers, 1), decoder: f.decoder}
	dec, err := lf.decoders(log, true)
	if err != nil {
		return err
	}
	defer dec.Close()
	enc, err := newEncoders(f.encoder, dec.pool)
	if err != nil {
		return err
	}
	src, err := openSource(ctx, source, sf, log)
	if err != nil {
		return err
	}
	defer src.Close()
	// The tree is walked for metadata only: its loader never loads.
	walk, closeWalk := lf.loader(src, dec, log)
	tree := fs.New(fs.Config{Store: src, Chunks: walk}) // compress says itself what it cannot encode
	p, err := plan(ctx, tree, src, opts, log)
	closeWalk()
	if err != nil {
		return err
	}
	// Source chunks are read through the chunk loader without readahead;
	// its decoded tier keeps source chunks that several new chunks need
	// when rechunking.
	lf.decoded = 0
	if p.rechunks {
		lf.decoded = min(f.memory/2, 512<<20)
	}
	if strings.Contains(source, "://") {
		lf.compressed = 64 << 20
	}
	loader, closeLoader := lf.loader(src, dec, log)
	defer closeLoader()
	c := &copier{
		log: log, src: src, chunks: loader, encoders: enc, dst: dst, dest: dest, held: held,
		workers: lf.workers, memory: int64(f.memory), writeEmpty: f.writeEmpty, resume: f.resume, verify: f.verify,
		settings: settingsOf(fl), part: prt,
	}
	if f.finish {
		return c.finish(ctx, p, stdout)
	}
	c.divide(p)
	c.progress = newProgress(stderr, f.progress, c.total(p), prt)
	err = c.run(ctx, p)
	c.progress.stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w; DEST holds only whole chunks, run the same command with --resume to finish", err)
		}
		return err
	}
	return c.summary(stdout, p)
}

// settingFlags are the flags that shape what is written: an interrupted
// run's are recorded in runFile (a part's in its own record), and --resume
// and --finish take them from there.
var settingFlags = []string{"codec", "format", "chunks", "shard", "write-empty"}

// settingsOf returns the values of settingFlags in fl.
func settingsOf(fl *flag.FlagSet) map[string]string {
	m := map[string]string{}
	for _, name := range settingFlags {
		m[name] = fl.Lookup(name).Value.String()
	}
	return m
}

// takeSettings checks the flags of settingFlags against the records of
// the unfinished job in DEST: with take (--resume, --finish) those not
// given on the command line are set to the recorded values; a flag given
// (or, without take, left at its default) with another value than a
// record's is refused: resuming with other settings would rewrite (or
// mix) what the job wrote, and every part of a job needs the same.
func takeSettings(fl *flag.FlagSet, dest string, held *destState, prt part, take bool, log *slog.Logger) error {
	type rec struct {
		what  string // who recorded it, for messages
		flags map[string]string
	}
	var recs []rec
	switch {
	case prt.n == 0 && !take:
	case prt.n == 0 && held.run != nil:
		recs = append(recs, rec{"--resume: DEST " + dest + " was", held.run.Flags})
	default:
		if r := held.parts[prt.k]; r != nil && prt.n > 0 {
			recs = append(recs, rec{"DEST " + dest + ": part " + prt.String() + " was", r.Flags})
		}
		for p, r := range held.partRecords() {
			if p.k != prt.k || prt.n == 0 {
				recs = append(recs, rec{"DEST " + dest + ": part " + p.String() + " of this job was", r.Flags})
			}
		}
	}
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var taken []any
	for _, r := range recs {
		for _, name := range settingFlags {
			was, ok := r.flags[name]
			if !ok {
				continue
			}
			now := fl.Lookup(name).Value.String()
			if given[name] || !take {
				if now != was {
					return fmt.Errorf("%s started with --%s %s, this run says --%s %s: refused (give the same value, or leave the flag out and add --resume to take the recorded one)", r.what, name, was, name, now)
				}
				continue
			}
			if err := fl.Set(name, was); err != nil {
				return fmt.Errorf("DEST: a record's --%s %q: %w", name, was, err)
			}
			given[name] = true // the next record must agree with this one
			if now != was {
				taken = append(taken, name, was)
			}
		}
	}
	if len(taken) > 0 {
		log.Info("taking the settings the job recorded in DEST", taken...)
	}
	return nil
}

// compressOptions are the parsed flags that shape what is written.
type compressOptions struct {
	format    int     // 2, 3, or 0: keep
	stages    []stage // --codec, filters first
	chunks    []int   // nil: keep
	shardKeep bool    // --shard keep
	shardSize int64   // --shard SIZE; 0: none
	shardPer  []int   // --shard AxB
}

// A stage is one entry of --codec: a numcodecs id and its settings.
type stage struct {
	id   string
	args []string
}

func (f *compressFlags) options() (compressOptions, error) {
	var o compressOptions
	switch f.format {
	case "keep":
	case "v2", "2":
		o.format = 2
	case "v3", "3":
		o.format = 3
	default:
		return o, fmt.Errorf("--format %q: want v2, v3 or keep", f.format)
	}
	for i, s := range strings.Split(f.codec, ",") {
		parts := strings.Split(strings.TrimSpace(s), ":")
		st := stage{id: parts[0], args: parts[1:]}
		switch st.id {
		case "none", "raw":
			if len(st.args) > 0 || strings.Count(f.codec, ",") > 0 {
				return o, fmt.Errorf("--codec %q: none stands alone", f.codec)
			}
			continue
		case "delta", "shuffle":
			if len(st.args) > 0 {
				return o, fmt.Errorf("--codec %q: %s takes no settings (it uses the array's dtype)", f.codec, st.id)
			}
		case "blosc", "zstd", "lz4", "gzip", "zlib":
			if i != strings.Count(f.codec, ",") {
				return o, fmt.Errorf("--codec %q: the compressor %s must come last", f.codec, st.id)
			}
		default:
			return o, fmt.Errorf("--codec %q: unknown codec %q (want blosc, zstd, lz4, gzip, zlib, delta, shuffle or none)", f.codec, st.id)
		}
		o.stages = append(o.stages, st)
	}
	// Check the settings once, with a stand-in dtype.
	if _, _, err := o.codecs("<i4", 4); err != nil {
		return o, err
	}
	if f.chunks != "keep" {
		c, err := parseShape(f.chunks, true)
		if err != nil {
			return o, fmt.Errorf("--chunks: %w", err)
		}
		o.chunks = c
	}
	switch {
	case f.shard == "keep":
		o.shardKeep = true
	case f.shard == "none":
	case strings.Contains(f.shard, "x") || !strings.ContainsAny(f.shard, "BbKkMmGgTt"):
		per, err := parseShape(f.shard, false)
		if err != nil {
			return o, fmt.Errorf("--shard: %w", err)
		}
		o.shardPer = per
	default:
		n, err := ParseSize(f.shard)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--shard %q: want keep, none, a size such as 64MiB, or chunks per axis such as 2x2x2", f.shard)
		}
		o.shardSize = n
	}
	if o.format == 2 && (o.shardSize > 0 || o.shardPer != nil) {
		return o, errors.New("--shard: Zarr v2 has no sharding; use --format v3")
	}
	return o, nil
}

// parseShape reads "1x512x512"; with whole, -1 stands for a whole axis.
func parseShape(s string, whole bool) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, "x") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n == 0 || n < -1 || (n == -1 && !whole) {
			return nil, fmt.Errorf("%q is not a shape like 2x512x512", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// codecs returns the numcodecs configurations of --codec for an array of
// dtype (a typestr) and item size: the compressor (nil for none) and the
// filters.
func (o compressOptions) codecs(dtype string, itemSize int) (codec.Config, []codec.Config, error) {
	var comp codec.Config
	var filters []codec.Config
	for _, st := range o.stages {
		m := map[string]any{"id": st.id}
		arg := func(i int, def string) string {
			if i < len(st.args) && st.args[i] != "" {
				return st.args[i]
			}
			return def
		}
		num := func(i int, def string) (int, error) {
			n, err := strconv.Atoi(arg(i, def))
			if err != nil {
				return 0, fmt.Errorf("--codec %s: %q is not a number", st.id, arg(i, def))
			}
			return n, nil
		}
		var err error
		switch st.id {
		case "blosc":
			m["cname"] = arg(0, "lz4")
			if m["clevel"], err = num(1, "5"); err != nil {
				return nil, nil, err
			}
			sh, ok := map[string]int{"noshuffle": 0, "0": 0, "shuffle": 1, "1": 1, "bitshuffle": 2, "2": 2, "auto": -1, "-1": -1}[arg(2, "shuffle")]
			if !ok {
				return nil, nil, fmt.Errorf("--codec blosc: shuffle %q: want noshuffle, shuffle, bitshuffle or auto", arg(2, ""))
			}
			m["shuffle"] = sh
			if m["blocksize"], err = num(3, "0"); err != nil {
				return nil, nil, err
			}
		case "zstd":
			m["level"], err = num(0, "3")
		case "gzip", "zlib":
			m["level"], err = num(0, map[string]string{"gzip": "6", "zlib": "1"}[st.id])
		case "lz4":
			m["acceleration"], err = num(0, "1")
		case "delta":
			m["dtype"] = dtype
		case "shuffle":
			m["elementsize"] = itemSize
		}
		if err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(m)
		var c codec.Config
		json.Unmarshal(b, &c)
		if _, err := codec.NewEncoderConfig(c, itemSize); err != nil {
			return nil, nil, fmt.Errorf("--codec %s: %w", st.id, err)
		}
		if st.id == "delta" || st.id == "shuffle" {
			filters = append(filters, c)
		} else {
			comp = c
		}
	}
	return comp, filters, nil
}

// checkDest refuses a DEST that would lose or corrupt data, before
// anything is written: inside SOURCE (or SOURCE itself), or, local, a
// file, or not writable. What DEST holds is checkHolds's.
func checkDest(source, dest string) error {
	if strings.Contains(dest, "://") {
		return checkRemoteDest(source, dest)
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("DEST %s: %w", dest, err)
	}
	realDest := resolveExisting(absDest)
	if !strings.Contains(source, "://") {
		if realSrc, err := filepath.EvalSymlinks(source); err == nil {
			if realSrc, err = filepath.Abs(realSrc); err == nil && (realDest == realSrc || strings.HasPrefix(realDest, realSrc+string(filepath.Separator))) {
				return fmt.Errorf("DEST %s is inside SOURCE %s: refused, it would write into the store it reads", dest, source)
			}
		}
	}
	fi, err := os.Stat(absDest)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		parent, err := nearestDir(absDest)
		if err != nil {
			return fmt.Errorf("DEST %s: cannot create it: %w", dest, err)
		}
		if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
			return fmt.Errorf("DEST %s: cannot create it in %s: %w", dest, parent, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("DEST %s: %w", dest, err)
	case !fi.IsDir():
		return fmt.Errorf("DEST %s is a file, not a directory", dest)
	}
	if err := unix.Access(absDest, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("DEST %s is not writable: %w", dest, err)
	}
	return nil
}

// checkRemoteDest refuses an s3:// DEST inside an s3:// SOURCE (the same
// bucket, at or below its prefix) and URLs that are no DEST.
func checkRemoteDest(source, dest string) error {
	if scheme, _, _ := strings.Cut(dest, "://"); !strings.EqualFold(scheme, "s3") {
		return fmt.Errorf("DEST %s: want a local directory or s3://bucket/prefix", redactSource(dest))
	}
	db, dp, err := s3store.ParseURL(dest)
	if err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	if scheme, _, _ := strings.Cut(source, "://"); !strings.EqualFold(scheme, "s3") {
		return nil
	}
	sb, sp, err := s3store.ParseURL(source)
	if err == nil && sb == db && (sp == "" || dp == sp || strings.HasPrefix(dp, sp+"/")) {
		return fmt.Errorf("DEST %s is inside SOURCE %s: refused, it would write into the store it reads", dest, source)
	}
	return nil
}

// resolveExisting resolves the symlinks of the longest existing prefix of
// the absolute path p.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// nearestDir is the closest existing ancestor of p, which must be a
// directory.
func nearestDir(p string) (string, error) {
	for cur := filepath.Dir(p); ; cur = filepath.Dir(cur) {
		fi, err := os.Stat(cur)
		switch {
		case err == nil && fi.IsDir():
			return cur, nil
		case err == nil:
			return "", fmt.Errorf("%s is a file", cur)
		case !errors.Is(err, os.ErrNotExist) || cur == filepath.Dir(cur):
			return "", err
		}
	}
}

// A compressPlan is everything to write, decided before the first byte.
type compressPlan struct {
	arrays       []*planArray
	groups       []*planGroup
	consolidated int  // format of the root's consolidated metadata; 0: none
	rechunks     bool // some array is rechunked: source chunks are cached
}

// A planArray is one array: where it comes from and what it becomes.
type planArray struct {
	path   string            // store key of the array directory; "." for the root
	srcDir string            // the same as the loader takes it: "" for the root
	src    *zarr.Array       // as presented by the source
	files  map[string][]byte // its metadata files to write
	enc    *zarr.Encoding    // nil: copied as stored
	why    error             // copied as stored: why
	same   bool              // each new chunk is one source chunk, byte for byte
}

// A planGroup is one group and its metadata files to write.
type planGroup struct {
	path  string
	files map[string][]byte
}

// plan walks the source tree and decides each array's metadata and
// encoding, and each group's. Nothing is written.
func plan(ctx context.Context, tree *fs.Tree, src store.Store, o compressOptions, log *slog.Logger) (*compressPlan, error) {
	infos, err := tree.Arrays(ctx)
	if err != nil {
		return nil, fmt.Errorf("SOURCE: %w", err)
	}
	groups, err := tree.Groups(ctx)
	if err != nil {
		return nil, fmt.Errorf("SOURCE: %w", err)
	}
	if len(infos) == 0 {
		return nil, errors.New("SOURCE holds no Zarr array")
	}
	p := &compressPlan{}
	for _, in := range infos {
		pa, err := planOne(ctx, src, in, o, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		p.rechunks = p.rechunks || (pa.enc != nil && !pa.same)
		p.arrays = append(p.arrays, pa)
	}
	for _, g := range groups {
		files, err := readMeta(ctx, src, g.Path, zarr.GroupFile, zarr.AttrsFile, zarr.MetadataFile, zarr.ConsolidatedFile)
		if err != nil {
			return nil, err
		}
		format := g.Format
		if o.format != 0 {
			format = o.format
		}
		if g.Path == "." {
			if files[zarr.ConsolidatedFile] != nil {
				p.consolidated = format
			} else if b := files[zarr.MetadataFile]; b != nil {
				if _, grp, err := zarr.ParseV3(b); err == nil && grp != nil && grp.Consolidated != nil {
					p.consolidated = format
				}
			}
		}
		gf, err := zarr.StoreGroup(files, format)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Path, err)
		}
		p.groups = append(p.groups, &planGroup{path: g.Path, files: gf})
	}
	return p, nil
}

// readMeta reads the named metadata files of directory dir that exist.
func readMeta(ctx context.Context, s store.Store, dir string, names ...string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range names {
		b, err := s.ReadKey(ctx, path.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// planOne decides one array.
func planOne(ctx context.Context, src store.Store, in fs.ArrayInfo, o compressOptions, log *slog.Logger) (*planArray, error) {
	pa := &planArray{path: in.Path, srcDir: strings.TrimPrefix(in.Path, "."), src: in.Array}
	files, err := readMeta(ctx, src, in.Path, zarr.ArrayFile, zarr.AttrsFile, zarr.MetadataFile)
	if err != nil {
		return nil, err
	}
	if in.PassThrough != nil || in.Array == nil {
		pa.why = in.PassThrough
		if pa.why == nil {
			pa.why = errors.New("its metadata does not parse")
		}
		log.Warn("array cannot be encoded: copied as stored", "key", in.Path, "err", pa.why)
		pa.files = files
		return pa, nil
	}
	a := in.Array
	t := zarr.Target{Format: in.Format, Chunks: a.Chunks}
	if o.format != 0 {
		t.Format = o.format
	}
	rank := len(a.Shape)
	if o.chunks != nil {
		if len(o.chunks) == rank {
			t.Chunks = make([]int, rank)
			for i, c := range o.chunks {
				t.Chunks[i] = c
				if c == -1 {
					t.Chunks[i] = max(a.Shape[i], 1)
				}
			}
		} else {
			log.Warn("--chunks is for arrays of another rank: chunks kept", "key", in.Path, "rank", rank)
		}
	}
	if t.Format == 3 {
		t.Shard = shardShape(in, t.Chunks, o, log)
	}
	if t.Compressor, t.Filters, err = o.codecs(a.DType, a.ItemSize); err != nil {
		return nil, err
	}
	pa.files, err = zarr.StoreArray(files, a, t)
	if errors.Is(err, codec.ErrNotRaw) && t.Format != in.Format {
		// No equivalent in the other format (a structured dtype in v3):
		// encoded all the same, in the format it has.
		log.Warn("array kept in its format", "key", in.Path, "format", in.Format, "err", err)
		t.Format, t.Shard = in.Format, nil
		pa.files, err = zarr.StoreArray(files, a, t)
	}
	if err != nil {
		return nil, err
	}
	if pa.enc, err = zarr.NewEncoding(pa.files); err != nil {
		return nil, err
	}
	d := pa.enc.Array()
	pa.same = slices.Equal(d.Chunks, a.Chunks) && (d.Order == a.Order || rank <= 1)
	return pa, nil
}

// shardShape decides the chunks per shard of a v3 array written with the
// chunk shape chunks: as the source's (--shard keep), none, within a size,
// or as given for arrays of that rank; nil for unsharded.
func shardShape(in fs.ArrayInfo, chunks []int, o compressOptions, log *slog.Logger) []int {
	a := in.Array
	rank := len(a.Shape)
	grid := make([]int, rank)
	for i := range rank {
		grid[i] = max((a.Shape[i]+chunks[i]-1)/chunks[i], 1)
	}
	switch {
	case o.shardKeep && in.Shards != nil && slices.Equal(chunks, a.Chunks):
		per := make([]int, rank)
		for i := range rank {
			per[i] = in.Shards[i] / a.Chunks[i]
		}
		return per
	case o.shardPer != nil && len(o.shardPer) == rank:
		return o.shardPer
	case o.shardPer != nil:
		log.Warn("--shard is for arrays of another rank: not sharded", "key", in.Path, "rank", rank)
	case o.shardSize > 0:
		// Whole chunks per axis, the last (fastest) axis first, as many as
		// fit in the size and the array holds.
		chunkLen := int64(a.ItemSize)
		for _, c := range chunks {
			chunkLen *= int64(c)
		}
		room := max(o.shardSize/max(chunkLen, 1), 1)
		per := make([]int, rank)
		for i := rank - 1; i >= 0; i-- {
			per[i] = int(min(int64(grid[i]), room))
			room /= int64(per[i])
		}
		return per
	}
	return nil
}
