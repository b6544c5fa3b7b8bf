package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/compress"
	"github.com/zfuse/zfuse/gpu"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
)

// zfuse compress [flags] SOURCE DEST: read every array of SOURCE decoded
// (anything zfuse mounts), encode its chunks on every core, and write a
// Zarr store to DEST, a local directory or an S3 prefix. The engine (the
// plan, the copy, the records in DEST, --part and --finish) is package
// compress; this file is the command: flags, opening SOURCE and DEST, and
// the wiring; compress_report.go shows progress and the summary.

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
	// parses them again with the same functions (compress.ParseOptions).
	f := &compressFlags{codec: "blosc:lz4:5:shuffle", format: "keep", chunks: "keep", shard: "keep", workers: runtime.GOMAXPROCS(0),
		decoder: gpu.Auto, encoder: "auto", memory: 1 << 30, progress: "auto", logLevel: levelFlag(slog.LevelInfo)}
	fl.Var(checked(&f.codec, func(s string) error { _, err := compress.ParseStages(s); return err }), "codec", "the codecs of every array written, e.g. blosc:lz4:5:shuffle, zstd:3, lz4, gzip:6, delta,zstd:1, none (see above)")
	fl.Var(checked(&f.format, func(s string) error { _, err := compress.ParseFormat(s); return err }), "format", "Zarr format written: v2, v3, or keep each array's")
	fl.Var(checked(&f.chunks, func(s string) error { _, err := compress.ParseChunks(s); return err }), "chunks", "chunk shape written (for sharded v3, the inner chunks): keep, or a shape like 1x512x512 for arrays of that rank (-1: the whole axis); rechunking reads the source chunks each new chunk needs")
	fl.Var(checked(&f.shard, func(s string) error { _, _, _, err := compress.ParseShard(s); return err }), "shard", "v3 sharding: keep (a sharded source's shard shape), none, a size such as 64MiB (each array gets a shard of whole chunks per axis within it), or chunks per axis like 2x2x2 for arrays of that rank; a size or chunks per axis writes v3 (--format keep: v2 arrays become v3)")
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
	fl.Var(checked(&f.part, func(s string) error { _, err := compress.ParsePart(s); return err }), "part", "write only share K of N (K from 0, e.g. 2/8) of the chunks and no metadata, so that N processes on any machines write one DEST at once; then --finish")
	fl.Var((*boolFlag)(&f.finish), "finish", "once every --part K/N of the job has run: check that each wrote its whole share with the same settings, write the metadata and print the job's summary")
	return f
}

// compress is the zfuse compress command.
func runCompress(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl, f, sf, err := parseCompress(args, stdout)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.Level(f.logLevel)}))
	prt, err := f.checkPart()
	if err != nil {
		return err
	}
	source, dest := fl.Arg(0), fl.Arg(1)
	dst, held, err := openJob(ctx, fl, f, sf, prt, source, dest, log)
	if errors.Is(err, compress.ErrFinished) {
		fmt.Fprintf(stderr, "zfuse compress: DEST %s holds the finished store already (no part records left): nothing to do\n", dest)
		return nil
	} else if err != nil {
		return err
	}
	defer dst.Close()
	opts, err := f.options()
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	lf, dec, enc, err := f.coders(log)
	if err != nil {
		return err
	}
	defer dec.Close()
	src, err := store.Open(ctx, source, sf.options(log))
	if err != nil {
		return err
	}
	defer src.Close()
	p, err := planSource(ctx, src, source, opts, log)
	if err != nil {
		return err
	}
	cfg := compress.Config{
		Log: log, Src: src, Encoders: enc, Dst: dst, Dest: dest, Held: held,
		Workers: lf.workers, Memory: int64(f.memory), WriteEmpty: f.writeEmpty, Resume: f.resume, Verify: f.verify,
		Settings: settingsOf(fl), Part: prt,
	}
	if f.finish {
		return finishJob(ctx, p, cfg, stdout)
	}
	loader, closeLoader := sourceLoader(lf, p, int64(f.memory), source, src, dec, log)
	defer closeLoader()
	cfg.Chunks = loader
	return runJob(ctx, p, cfg, f.progress, stdout, stderr)
}

// parseCompress parses zfuse compress's command line; with -h it prints
// the usage, and compressUsage after it.
func parseCompress(args []string, stdout io.Writer) (*flag.FlagSet, *compressFlags, *sourceFlags, error) {
	fl := flag.NewFlagSet("zfuse compress", flag.ContinueOnError)
	f := addCompressFlags(fl)
	sf := addSourceFlags(fl)
	if err := parseFlags(fl, args, 2, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "\n%s\n", compressUsage)
		}
		return nil, nil, nil, err
	}
	return fl, f, sf, nil
}

// coders starts the job's decoders (--workers, --decoder) and its
// encoders (--encoder), on the decoders' CPU pool. The caller closes dec.
func (f *compressFlags) coders(log *slog.Logger) (*loaderFlags, *decoders, func(codec.Encoder) codec.BatchEncoder, error) {
	lf := &loaderFlags{workers: max(f.workers, 1), decoder: f.decoder}
	dec, err := lf.decoders(log, true)
	if err != nil {
		return nil, nil, nil, err
	}
	enc, err := compress.Encoders(f.encoder, dec.pool)
	if err != nil {
		dec.Close()
		return nil, nil, nil, err
	}
	return lf, dec, enc, nil
}

// sourceLoader returns the chunk loader the copy reads source chunks
// through, without readahead; its decoded tier keeps source chunks that
// several new chunks need when rechunking, within half of memory.
func sourceLoader(lf *loaderFlags, p *compress.Plan, memory int64, source string, src store.Store, dec *decoders, log *slog.Logger) (compress.Chunks, func()) {
	lf.decoded = 0
	if p.Rechunks {
		lf.decoded = min(Size(memory/2), 512<<20)
	}
	if strings.Contains(source, "://") {
		lf.compressed = 64 << 20
	}
	l, stop := lf.loader(src, dec, log)
	return l, stop
}

// checkPart parses --part and refuses what --finish cannot take.
func (f *compressFlags) checkPart() (compress.Part, error) {
	var prt compress.Part
	if f.part != "" {
		var err error
		if prt, err = compress.ParsePart(f.part); err != nil {
			return prt, badUsage("compress", "%w", err)
		}
	}
	if f.finish && (prt.N > 0 || f.verify) {
		return prt, badUsage("compress", "--finish writes no chunk: --part and --verify belong on the parts")
	}
	return prt, nil
}

// openJob checks and opens DEST, reads what it holds, and takes the
// settings of the job it holds (--resume, --finish) into fl. It returns
// compress.ErrFinished when --finish finds the job finished already.
func openJob(ctx context.Context, fl *flag.FlagSet, f *compressFlags, sf *sourceFlags, prt compress.Part, source, dest string, log *slog.Logger) (compress.Destination, *compress.DestState, error) {
	if err := checkDest(source, dest); err != nil {
		return nil, nil, err
	}
	dst, err := openDest(ctx, dest, sf, log)
	if err != nil {
		return nil, nil, err
	}
	held, err := compress.ReadDest(ctx, dst)
	if err == nil {
		err = compress.CheckHolds(dest, held, prt, f.finish, f.resume)
	}
	if err == nil {
		err = takeSettings(fl, dest, held, prt, f.resume || f.finish, log)
	}
	if err != nil {
		dst.Close()
		return nil, nil, err
	}
	return dst, held, nil
}

// startCPUProfile starts --cpu-profile (nothing for ""); the function it
// returns stops it.
func startCPUProfile(name string) (stop func(), err error) {
	if name == "" {
		return func() {}, nil
	}
	pf, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// planSource walks SOURCE for its metadata and plans the copy. Settings
// that fit no array of SOURCE are a usage error.
func planSource(ctx context.Context, src store.Store, source string, opts compress.Options, log *slog.Logger) (*compress.Plan, error) {
	// A tree for metadata only (no Chunks): it reads shard indexes itself.
	tr := tree.New(tree.Config{Store: src}) // compress says itself what it cannot encode
	if err := needArrays(ctx, tr, source); err != nil {
		return nil, err
	}
	p, err := compress.NewPlan(ctx, tr, src, opts, log)
	var se *compress.SettingsError
	if errors.As(err, &se) {
		return nil, badUsage("compress", "%w", se.Err)
	}
	return p, err
}

// runJob copies the plan with a progress display and prints the summary.
func runJob(ctx context.Context, p *compress.Plan, cfg compress.Config, mode string, stdout, stderr io.Writer) error {
	chunks, bytes := compress.Total(p, cfg.Part)
	counts, prog := newCompressProgress(stderr, mode, chunks, bytes, cfg.Part)
	cfg.Progress = counts.add
	stats, err := compress.Run(ctx, p, cfg)
	prog.stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w; DEST holds only whole chunks, run the same command with --resume to finish", err)
		}
		return err
	}
	return summary(stdout, p, stats, cfg.Verify, cfg.Part)
}

// finishJob is --finish: it checks the parts, writes the metadata and
// prints the job's summary.
func finishJob(ctx context.Context, p *compress.Plan, cfg compress.Config, stdout io.Writer) error {
	start := time.Now()
	recs, err := compress.Finish(ctx, p, cfg)
	if err != nil {
		return err
	}
	return jobSummary(stdout, p, recs, time.Since(start))
}

// settingFlags are the flags that shape what is written: an interrupted
// run's are recorded in compress.RunFile (a part's in its own record), and --resume
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
func takeSettings(fl *flag.FlagSet, dest string, held *compress.DestState, prt compress.Part, take bool, log *slog.Logger) error {
	recs := held.Recorded(dest, prt, take)
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var taken []any
	for _, r := range recs {
		for _, name := range settingFlags {
			was, ok := r.Flags[name]
			if !ok {
				continue
			}
			now := fl.Lookup(name).Value.String()
			if given[name] || !take {
				if now != was {
					return fmt.Errorf("%s started with --%s %s, this run says --%s %s: refused (give the same value, or leave the flag out and add --resume to take the recorded one)", r.What, name, was, name, now)
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

// options are the Options of the flags, each checked when it was set
// (compress.ParseFormat, ...); what is left to refuse is how they combine,
// bad usage.
func (f *compressFlags) options() (compress.Options, error) {
	o, err := compress.ParseOptions(f.format, f.codec, f.chunks, f.shard)
	var se *compress.SettingsError
	if errors.As(err, &se) {
		return o, badUsage("compress", "%w", se.Err)
	}
	return o, err
}

// checkDest refuses a DEST that is neither a local directory nor an s3://
// URL, and what compress.CheckDest refuses.
func checkDest(source, dest string) error {
	if scheme, _, ok := strings.Cut(dest, "://"); ok && !strings.EqualFold(scheme, "s3") {
		return fmt.Errorf("DEST %s: want a local directory or s3://bucket/prefix", store.Redact(dest))
	}
	return compress.CheckDest(source, dest)
}
