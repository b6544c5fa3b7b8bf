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
	"github.com/zfuse/zfuse/internal/bytesize"
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
	logLevel   levelFlag
	cpuProfile string
	part       string // --part K/N
	finish     bool
}

func addCompressFlags(fl *flag.FlagSet) *compressFlags {
	// Each value is checked where it is parsed (flags.go): options()
	// parses them again with the same functions.
	f := &compressFlags{codec: "blosc:lz4:5:shuffle", format: "keep", chunks: "keep", shard: "keep", workers: runtime.GOMAXPROCS(0),
		decoder: gpu.Auto, encoder: "auto", memory: 1 << 30, progress: "auto", logLevel: levelFlag(slog.LevelInfo)}
	fl.Var(checked(&f.codec, func(s string) error { _, err := parseCodecs(s); return err }), "codec", "the codecs of every array written, e.g. blosc:lz4:5:shuffle, zstd:3, lz4, gzip:6, delta,zstd:1, none (see above)")
	fl.Var(checked(&f.format, func(s string) error { _, err := parseFormat(s); return err }), "format", "Zarr format written: v2, v3, or keep each array's")
	fl.Var(checked(&f.chunks, func(s string) error { _, err := parseChunks(s); return err }), "chunks", "chunk shape written (for sharded v3, the inner chunks): keep, or a shape like 1x512x512 for arrays of that rank (-1: the whole axis); rechunking reads the source chunks each new chunk needs")
	fl.Var(checked(&f.shard, func(s string) error { _, _, _, err := parseShard(s); return err }), "shard", "v3 sharding: keep (a sharded source's shard shape), none, a size such as 64MiB (each array gets a shard of whole chunks per axis within it), or chunks per axis like 2x2x2 for arrays of that rank; a size or chunks per axis writes v3 (--format keep: v2 arrays become v3)")
	fl.Var((*countFlag)(&f.workers), "workers", "CPU workers decoding and encoding chunks")
	fl.Var((*modeFlag)(&f.decoder), "decoder", "which decoder reads LZ4 and Blosc-LZ4 source chunks, `auto|cpu|gpu`, as for mount")
	fl.Var(choice(&f.encoder, "auto", "cpu", "gpu"), "encoder", "which encoder writes chunks, `auto|cpu|gpu`: zfuse has no GPU encoder yet, so auto is the CPU pool and gpu is refused")
	fl.Var((*boolFlag)(&f.writeEmpty), "write-empty", "also write chunks whose every element is the fill value (by default they are left out, as zarr-python does, and read back as the fill value)")
	fl.Var((*boolFlag)(&f.resume), "resume", "continue an interrupted run into the same DEST: chunks already written with the same settings are kept")
	fl.Var((*boolFlag)(&f.verify), "verify", "read every chunk written back from DEST, decode it and compare it with the source; the summary says how many were")
	fl.Var(&f.memory, "memory", "bound on the chunk bytes in flight (read, encoded, being written), e.g. 512MiB")
	fl.Var(choice(&f.progress, "auto", "bar", "plain", "none"), "progress", "progress on stderr, `auto|bar|plain|none`: auto (a bar on a terminal, plain lines otherwise), bar, plain, none")
	fl.Var(&f.logLevel, "log-level", "log level, `debug|info|warn|error`")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the run to this file, for go tool pprof")
	fl.Var(checked(&f.part, func(s string) error { _, err := parsePart(s); return err }), "part", "write only share K of N (K from 0, e.g. 2/8) of the chunks and no metadata, so that N processes on any machines write one DEST at once; then --finish")
	fl.Var((*boolFlag)(&f.finish), "finish", "once every --part K/N of the job has run: check that each wrote its whole share with the same settings, write the metadata and print the job's summary")
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.Level(f.logLevel)}))
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
	if err := needArrays(ctx, tree, source); err != nil {
		closeWalk()
		return err
	}
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
	shardV3   bool    // format is 3 because --shard asks for shards, with --format keep
}

// A stage is one entry of --codec: a numcodecs id and its settings.
type stage struct {
	id   string
	args []string
}

// options parses the flags that shape what is written. Each was checked
// when it was set; what is left to refuse is how they combine.
func (f *compressFlags) options() (compressOptions, error) {
	var o compressOptions
	var err error
	if o.format, err = parseFormat(f.format); err != nil {
		return o, fmt.Errorf("--format %q: %w", f.format, err)
	}
	if o.stages, err = parseCodecs(f.codec); err != nil {
		return o, fmt.Errorf("--codec %q: %w", f.codec, err)
	}
	if o.chunks, err = parseChunks(f.chunks); err != nil {
		return o, fmt.Errorf("--chunks: %w", err)
	}
	if o.shardKeep, o.shardSize, o.shardPer, err = parseShard(f.shard); err != nil {
		return o, fmt.Errorf("--shard: %w", err)
	}
	switch sharded := o.shardSize > 0 || o.shardPer != nil; {
	case sharded && o.format == 2:
		return o, badUsage("compress", "--format v2 --shard %s: Zarr v2 has no sharding (a shard size or shape writes Zarr v3)", f.shard)
	case sharded && o.format == 0:
		// Sharding is v3's: arrays stored as v2 are written as v3
		// (plan says which).
		o.format, o.shardV3 = 3, true
	}
	return o, nil
}

// parseFormat reads --format: 2, 3, or 0 for keep.
func parseFormat(s string) (int, error) {
	switch s {
	case "keep":
		return 0, nil
	case "v2", "2":
		return 2, nil
	case "v3", "3":
		return 3, nil
	}
	return 0, errors.New("want v2, v3 or keep")
}

// parseCodecs reads --codec: its stages, filters first, each checked with
// a stand-in dtype (<i4).
func parseCodecs(s string) ([]stage, error) {
	var stages []stage
	last := strings.Count(s, ",")
	for i, p := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(p), ":")
		st := stage{id: parts[0], args: parts[1:]}
		switch st.id {
		case "none", "raw":
			if len(st.args) > 0 || last > 0 {
				return nil, errors.New("none stands alone")
			}
			continue
		case "delta", "shuffle":
			if len(st.args) > 0 {
				return nil, fmt.Errorf("%s takes no settings (it uses the array's dtype)", st.id)
			}
		case "blosc", "zstd", "lz4", "gzip", "zlib":
			if i != last {
				return nil, fmt.Errorf("the compressor %s must come last", st.id)
			}
		default:
			return nil, fmt.Errorf("unknown codec %q (want blosc, zstd, lz4, gzip, zlib, delta, shuffle or none)", st.id)
		}
		stages = append(stages, st)
	}
	if _, _, _, err := (compressOptions{stages: stages}).codecs("<i4", 4); err != nil {
		return nil, err
	}
	return stages, nil
}

// parseChunks reads --chunks: nil for keep.
func parseChunks(s string) ([]int, error) {
	if s == "keep" {
		return nil, nil
	}
	return parseShape(s, true)
}

// parseShard reads --shard: keep, none (all false and nil), a size, or
// chunks per axis.
func parseShard(s string) (keep bool, size int64, per []int, err error) {
	switch {
	case s == "keep":
		return true, 0, nil, nil
	case s == "none":
		return false, 0, nil, nil
	case strings.Contains(s, "x") || !strings.ContainsAny(s, "BbKkMmGgTt"):
		per, err := parseShape(s, false)
		return false, 0, per, err
	}
	n, err := bytesize.Parse(s)
	if err != nil || n <= 0 {
		return false, 0, nil, fmt.Errorf("%q: want keep, none, a size such as 64MiB, or chunks per axis such as 2x2x2", s)
	}
	return false, n, nil, nil
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
// filters, and the filters of --codec that do not suit the dtype, left
// out (delta encodes integers stored as themselves): a store that mixes
// floats and integers gets delta where it applies.
func (o compressOptions) codecs(dtype string, itemSize int) (comp codec.Config, filters []codec.Config, skipped []string, err error) {
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
				return 0, fmt.Errorf("%s: %q is not a number", st.id, arg(i, def))
			}
			return n, nil
		}
		switch st.id {
		case "blosc":
			m["cname"] = arg(0, "lz4")
			if m["clevel"], err = num(1, "5"); err != nil {
				return nil, nil, nil, err
			}
			sh, ok := map[string]int{"noshuffle": 0, "0": 0, "shuffle": 1, "1": 1, "bitshuffle": 2, "2": 2, "auto": -1, "-1": -1}[arg(2, "shuffle")]
			if !ok {
				return nil, nil, nil, fmt.Errorf("blosc: shuffle %q: want noshuffle, shuffle, bitshuffle or auto", arg(2, ""))
			}
			m["shuffle"] = sh
			if m["blocksize"], err = num(3, "0"); err != nil {
				return nil, nil, nil, err
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
			return nil, nil, nil, err
		}
		b, _ := json.Marshal(m)
		var c codec.Config
		json.Unmarshal(b, &c)
		if _, err := codec.NewEncoderConfig(c, itemSize); err != nil {
			if st.id == "delta" { // its one setting is the dtype
				skipped = append(skipped, st.id)
				continue
			}
			return nil, nil, nil, fmt.Errorf("%s: %w", st.id, err)
		}
		if st.id == "delta" || st.id == "shuffle" {
			filters = append(filters, c)
		} else {
			comp = c
		}
	}
	return comp, filters, skipped, nil
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
	path    string            // store key of the array directory; "." for the root
	srcDir  string            // the same as the loader takes it: "" for the root
	src     *zarr.Array       // as presented by the source
	files   map[string][]byte // its metadata files to write
	enc     *zarr.Encoding    // nil: copied as stored
	why     error             // copied as stored: why
	skipped []string          // filters of --codec left out: they do not suit its dtype (delta on floats)
	same    bool              // each new chunk is one source chunk, byte for byte
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
	p := &compressPlan{}
	var asV3 []string // arrays stored as v2 that --shard writes as v3
	for _, in := range infos {
		pa, err := planOne(ctx, src, in, o, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		p.rechunks = p.rechunks || (pa.enc != nil && !pa.same)
		p.arrays = append(p.arrays, pa)
		if o.shardV3 && in.Format == 2 && pa.enc != nil {
			asV3 = append(asV3, in.Path)
		}
	}
	if err := o.fits(p.arrays); err != nil {
		return nil, err
	}
	if len(asV3) > 0 {
		log.Info("--shard writes Zarr v3: arrays stored as v2 are written as v3 (--format v3 is implied)", "arrays", strings.Join(asV3, ","))
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
	if t.Compressor, t.Filters, pa.skipped, err = o.codecs(a.DType, a.ItemSize); err != nil {
		return nil, fmt.Errorf("--codec: %w", err)
	}
	if len(pa.skipped) > 0 {
		log.Warn("--codec: "+strings.Join(pa.skipped, ",")+" does not suit this array (it encodes integers stored as themselves): written without it", "key", in.Path, "dtype", a.DType)
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

// fits refuses settings that apply to no array of the plan: --chunks or
// --shard chunks per axis for a rank no array has, or a filter that suits
// no array (each is for the arrays it suits, and says which it left out;
// for none, the command line is wrong).
func (o compressOptions) fits(arrays []*planArray) error {
	var ranks []int
	var skipped, encoded int
	for _, pa := range arrays {
		if pa.enc == nil {
			continue
		}
		encoded++
		ranks = append(ranks, len(pa.src.Shape))
		if len(pa.skipped) > 0 {
			skipped++
		}
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	has := func(rank int) string {
		var rs []string
		for _, r := range ranks {
			rs = append(rs, strconv.Itoa(r))
		}
		return fmt.Sprintf("SOURCE has no array of rank %d (its ranks: %s)", rank, strings.Join(rs, ", "))
	}
	switch {
	case encoded == 0:
		return nil
	case o.chunks != nil && !slices.Contains(ranks, len(o.chunks)):
		return badUsage("compress", "--chunks %s is for arrays of rank %d: %s", dims(o.chunks), len(o.chunks), has(len(o.chunks)))
	case o.shardPer != nil && !slices.Contains(ranks, len(o.shardPer)):
		return badUsage("compress", "--shard %s is for arrays of rank %d: %s", dims(o.shardPer), len(o.shardPer), has(len(o.shardPer)))
	case skipped == encoded:
		return badUsage("compress", "--codec: delta encodes integers stored as themselves, and no array of SOURCE is one: leave it out")
	}
	return nil
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
