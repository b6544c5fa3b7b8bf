package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/bytesize"
)

// zfuse bench compress measures the encode half against the C libraries
// on this machine, in one run, alternating the two sides every round:
//
//   - encode throughput: every chunk of the array, Blosc(lz4, clevel 5,
//     shuffle), numcodecs 0.11 with blosc.set_nthreads(cores) against the
//     CPU pool of --workers (one EncodeBatch);
//   - ratios: the same Blosc-lz4 against c-blosc's, and Zstd level 3
//     against libzstd's (through numcodecs);
//   - end to end: zfuse compress of the uncompressed store (read, encode,
//     write) against zarr-python 2.13 copying it with the same compressor
//     (zarr.copy), both writing to the same disk;
//   - at scale: the same zfuse compress as --parts processes at once
//     (--part K/N, the workers divided among them, then --finish) against
//     one process, and into an S3 DEST (versitygw's posix backend on
//     127.0.0.1, on the same disk), one process and in parts, against the
//     local directory.
//
// The input is zfuse bench's: a float32 array, smooth field plus noise, in
// 1 MiB chunks, written uncompressed by zarr-python (bench_compress.py).

//go:embed bench_compress.py
var benchCompressPy []byte

// RunCompress is zfuse bench compress: the rounds of cfg, then the
// report on stdout, progress on cfg.Stderr.
func RunCompress(ctx context.Context, cfg CompressConfig, stdout io.Writer) error {
	b := &compressBench{rounds: cfg.Rounds, workers: cfg.Workers, parts: cfg.Parts, size: cfg.Size,
		dir: cfg.Dir, python: cfg.Python, gwBin: cfg.Versitygw, stderr: cfg.Stderr, ctx: ctx}
	cleanup, err := b.prepare()
	defer cleanup()
	if err != nil {
		return err
	}
	var m benchCompressRuns
	m.parts = b.parts
	load0 := loadAvg()
	start := time.Now()
	for r := range b.rounds {
		for _, side := range b.sides(r, &m) {
			if err := side(); err != nil {
				return err
			}
		}
		b.say("round %d of %d done", r+1, b.rounds)
	}
	m.report(stdout, b.total, len(b.chunks), b.workers, start, load0)
	return nil
}

// A CompressConfig is one zfuse bench compress run: its flags.
type CompressConfig struct {
	Size                   int64     // decoded bytes of the array
	Rounds, Workers, Parts int       // rounds; zfuse's CPU workers (numcodecs' Blosc threads too); processes of the split runs
	Dir                    string    // where the stores go; "": a temporary directory, removed at the end
	Python                 string    // Python with zarr 2.13 and numcodecs 0.11
	Versitygw              string    // the versitygw binary for the S3 rows; "": found the usual ways, none: no S3 rows
	Stderr                 io.Writer // progress
}

// A compressBench is one run of zfuse bench compress: its flags, and what
// prepare sets up for the rounds.
type compressBench struct {
	rounds, workers, parts int
	size                   int64
	dir, python, gwBin     string
	stderr                 io.Writer

	ctx     context.Context
	py      string   // bench_compress.py, written into the work directory
	raw     string   // the uncompressed store
	chunks  [][]byte // its chunk files
	total   int64    // their bytes
	pool    *codec.Pool
	lz, zs  codec.Encoder // Blosc-lz4 and Zstd
	self    string        // this executable: zfuse compress
	threads string        // workers, for numcodecs and --workers
	outs    string        // where the copies go, this run's own
	gw      *benchGateway // nil: no S3 rows
}

func (b *compressBench) say(format string, a ...any) {
	fmt.Fprintf(b.stderr, "bench compress: "+format+"\n", a...)
}

// prepare makes the work directory, writes the uncompressed store (unless
// --dir holds it), reads its chunks, and starts the pool, the encoders and
// the S3 gateway. cleanup undoes it, in reverse order; it is never nil.
func (b *compressBench) prepare() (cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	work := b.dir
	if work != "" {
		if err := os.MkdirAll(work, 0o755); err != nil {
			return cleanup, err
		}
	} else {
		if work, err = os.MkdirTemp("", "zfuse-bench-compress-"); err != nil {
			return cleanup, err
		}
		undo = append(undo, func() { os.RemoveAll(work) })
	}
	b.py = filepath.Join(work, "bench_compress.py")
	if err := os.WriteFile(b.py, benchCompressPy, 0o644); err != nil {
		return cleanup, err
	}
	b.raw = filepath.Join(work, "raw.zarr")
	if err := b.writeRaw(); err != nil {
		return cleanup, err
	}
	if b.chunks, err = readChunks(b.raw); err != nil {
		return cleanup, err
	}
	for _, c := range b.chunks {
		b.total += int64(len(c))
	}
	b.pool = codec.NewPool(b.workers)
	undo = append(undo, func() { b.pool.Close() })
	if b.lz, err = codec.NewEncoder(json.RawMessage(`{"id":"blosc","cname":"lz4","clevel":5,"shuffle":1}`), 4); err != nil {
		return cleanup, err
	}
	if b.zs, err = codec.NewEncoder(json.RawMessage(`{"id":"zstd","level":3}`), 4); err != nil {
		return cleanup, err
	}
	if b.self, err = os.Executable(); err != nil {
		return cleanup, err
	}
	b.threads = strconv.Itoa(b.workers)
	// The copies go into a directory of this run's own, so that removing
	// them never touches what --dir held before.
	if b.outs, err = os.MkdirTemp(work, "zfuse-bench-out-"); err != nil {
		return cleanup, err
	}
	undo = append(undo, func() { os.RemoveAll(b.outs) })
	if b.gw, err = startBenchGateway(b.ctx, b.gwBin, b.outs); err != nil {
		return cleanup, err
	}
	if b.gw != nil {
		undo = append(undo, b.gw.stop)
	} else {
		b.say("no versitygw found: the S3 rows are left out (--versitygw)")
	}
	return cleanup, nil
}

// writeRaw writes the uncompressed float32 array with zarr-python, unless
// it is there already.
func (b *compressBench) writeRaw() error {
	if _, err := os.Stat(filepath.Join(b.raw, ".zarray")); err == nil {
		return nil
	}
	b.say("writing %s of float32 with zarr-python into %s...", bytesize.Exact(b.size), b.raw)
	cmd := exec.CommandContext(b.ctx, b.python, b.py, "write", b.raw, strconv.FormatInt(b.size, 10))
	cmd.Stderr = b.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench_compress.py write: %w", err)
	}
	return nil
}

// pyRun runs bench_compress.py with args and returns the numbers it
// prints as JSON.
func (b *compressBench) pyRun(args ...string) (map[string]float64, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(b.ctx, b.python, append([]string{b.py}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bench_compress.py %s: %v\n%s", args[0], err, &errb)
	}
	var r map[string]float64
	err := json.Unmarshal(out.Bytes(), &r)
	return r, err
}

// goEncode encodes every chunk with e on the pool and returns the seconds
// it took and the encoded bytes. Batches of 16 chunks go into the same 16
// output buffers, as zfuse compress reuses its buffers (and as numcodecs'
// output is malloc'd and freed per chunk): fresh output memory for all
// 1024 chunks at once would time page faults, not encoding.
func (b *compressBench) goEncode(e codec.Encoder) (float64, int64, error) {
	const batch = 16
	bufs := make([][]byte, batch)
	for i := range bufs {
		bufs[i] = make([]byte, e.MaxEncodedLen(len(b.chunks[0])))
	}
	be := b.pool.EncoderBatch(e)
	jobs := make([]codec.Job, batch)
	var n int64
	start := time.Now()
	for i := 0; i < len(b.chunks); i += batch {
		part := b.chunks[i:min(i+batch, len(b.chunks))]
		for k, c := range part {
			jobs[k] = codec.Job{Src: c, Dst: bufs[k][:0]}
		}
		if err := be.EncodeBatch(b.ctx, jobs[:len(part)]); err != nil {
			return 0, 0, err
		}
		for _, j := range jobs[:len(part)] {
			if j.Err != nil {
				return 0, 0, j.Err
			}
			n += int64(len(j.Dst))
		}
	}
	return time.Since(start).Seconds(), n, nil
}

// compressTo runs zfuse compress of raw into dest, through gw if not nil,
// as one process or as n at once with the workers divided among them,
// then --finish, and returns the rate in GB/s and the CPU seconds of the
// zfuse processes and of the gateway (with one) per GiB.
func (b *compressBench) compressTo(dest string, gw *benchGateway, n int) (rate, cpu, gwCPU float64, err error) {
	var env, args []string
	if gw != nil {
		env, args = gw.env, gw.flags
	}
	runOne := func(extra ...string) *exec.Cmd {
		cmd := exec.CommandContext(b.ctx, b.self, append(append(append([]string{"compress", "--progress", "none", "--codec", "blosc:lz4:5:shuffle"}, args...), extra...), b.raw, dest)...)
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	gw0 := gw.cpu()
	t0 := time.Now()
	var cmds []*exec.Cmd
	if n == 1 {
		cmds = append(cmds, runOne("--workers", b.threads))
	} else {
		for k := range n {
			cmds = append(cmds, runOne("--workers", strconv.Itoa(max(b.workers/n, 1)), "--part", fmt.Sprintf("%d/%d", k, n)))
		}
	}
	err = runAll(cmds, dest)
	if err == nil && n > 1 {
		fin := runOne("--finish")
		var eb bytes.Buffer
		fin.Stderr = &eb
		if e := fin.Run(); e != nil {
			err = fmt.Errorf("zfuse compress --finish %s: %v\n%s", dest, e, &eb)
		}
		cmds = append(cmds, fin)
	}
	sec := time.Since(t0).Seconds()
	gib := float64(b.total) / (1 << 30)
	for _, cmd := range cmds {
		if ps := cmd.ProcessState; ps != nil {
			cpu += (ps.UserTime() + ps.SystemTime()).Seconds() / gib
		}
	}
	return GBps(b.total, sec), cpu, (gw.cpu() - gw0).Seconds() / gib, err
}

// runAll starts the zfuse compress processes cmds at once and waits for
// them all; the error is the first that failed, with its stderr.
func runAll(cmds []*exec.Cmd, dest string) error {
	var errs []*bytes.Buffer
	for _, cmd := range cmds {
		var b bytes.Buffer
		cmd.Stderr = &b
		errs = append(errs, &b)
		if err := cmd.Start(); err != nil {
			return err
		}
	}
	var err error
	for i, cmd := range cmds {
		if e := cmd.Wait(); e != nil && err == nil {
			err = fmt.Errorf("zfuse compress %s: %v\n%s", dest, e, errs[i])
		}
	}
	return err
}

// sides returns the sides of round r, each adding its measurements to m,
// in this round's order (RoundOrder: each round in another).
func (b *compressBench) sides(r int, m *benchCompressRuns) []func() error {
	sides := []func() error{
		func() error { return b.cSide(m) },
		func() error { return b.goSide(m) },
		func() error { // zfuse, in parts
			dest := filepath.Join(b.outs, "parts.zarr")
			rate, cpu, _, err := b.compressTo(dest, nil, b.parts)
			os.RemoveAll(dest)
			m.zParts = append(m.zParts, rate)
			m.cpu[1] = append(m.cpu[1], cpu)
			return err
		},
	}
	if gw := b.gw; gw != nil {
		sides = append(sides,
			func() error { // zfuse into S3
				rate, cpu, gwCPU, err := b.compressTo("s3://bench/one.zarr", gw, 1)
				os.RemoveAll(filepath.Join(gw.root, "bench", "one.zarr"))
				m.s3Copy = append(m.s3Copy, rate)
				m.cpu[2], m.gwCPU[0] = append(m.cpu[2], cpu), append(m.gwCPU[0], gwCPU)
				return err
			},
			func() error { // zfuse into S3, in parts
				rate, cpu, gwCPU, err := b.compressTo("s3://bench/parts.zarr", gw, b.parts)
				os.RemoveAll(filepath.Join(gw.root, "bench", "parts.zarr"))
				m.s3Parts = append(m.s3Parts, rate)
				m.cpu[3], m.gwCPU[1] = append(m.cpu[3], cpu), append(m.gwCPU[1], gwCPU)
				return err
			})
	}
	return RoundOrder(r, sides)
}

// cSide measures the C libraries: numcodecs' Blosc-lz4 encode and ratio,
// its Zstd ratio, and zarr-python copying the store.
func (b *compressBench) cSide(m *benchCompressRuns) error {
	res, err := b.pyRun("encode", b.raw, b.threads, "blosc-lz4")
	if err != nil {
		return err
	}
	m.cEnc = append(m.cEnc, GBps(b.total, res["seconds"]))
	m.cLZ4 = int64(res["encoded"])
	if res, err = b.pyRun("encode", b.raw, b.threads, "zstd"); err != nil {
		return err
	}
	m.cZstd = int64(res["encoded"])
	dest := filepath.Join(b.outs, "py.zarr")
	res, err = b.pyRun("copy", b.raw, dest, b.threads)
	os.RemoveAll(dest)
	if err != nil {
		return err
	}
	m.pyCopy = append(m.pyCopy, GBps(b.total, res["seconds"]))
	return nil
}

// goSide measures zfuse: the pool's Blosc-lz4 encode and ratio, its Zstd
// ratio, and zfuse compress of the store as one process.
func (b *compressBench) goSide(m *benchCompressRuns) error {
	sec, n, err := b.goEncode(b.lz)
	if err != nil {
		return err
	}
	m.goEnc = append(m.goEnc, GBps(b.total, sec))
	m.goLZ4 = n
	if _, m.goZstd, err = b.goEncode(b.zs); err != nil {
		return err
	}
	dest := filepath.Join(b.outs, "zfuse.zarr")
	rate, cpu, _, err := b.compressTo(dest, nil, 1)
	os.RemoveAll(dest)
	m.zCopy = append(m.zCopy, rate)
	m.cpu[0] = append(m.cpu[0], cpu)
	return err
}

// readChunks reads every chunk file of the array at dir.
func readChunks(dir string) ([][]byte, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no chunk files in %s", dir)
	}
	return out, nil
}

// benchCompressRuns are the measurements, GB/s per round.
type benchCompressRuns struct {
	cEnc, goEnc, pyCopy, zCopy []float64
	zParts, s3Copy, s3Parts    []float64    // in parts; into S3, one process and in parts (none without versitygw)
	cpu                        [4][]float64 // CPU seconds of the zfuse processes per GiB: directory, in parts, S3, S3 in parts
	gwCPU                      [2][]float64 // versitygw's CPU seconds per GiB: one process, in parts
	parts                      int
	cLZ4, goLZ4, cZstd, goZstd int64 // encoded bytes
}

// report prints the setting, the rates, the CPU time and the targets.
func (m benchCompressRuns) report(w io.Writer, total int64, nchunks, workers int, start time.Time, load0 string) {
	fmt.Fprintf(w, "zfuse bench compress, %s: %s\n", start.UTC().Format("2006-01-02 15:04 MST"), machine())
	fmt.Fprintf(w, "array: float32, %s in %d chunks of 1 MiB, smooth field plus noise (zfuse bench's), stored uncompressed\n", bytesize.Format(total), nchunks)
	fmt.Fprintf(w, "zfuse: --workers %d; numcodecs 0.11: blosc.set_nthreads(%d); %d rounds alternating, median [min-max]; rates are 1e9 bytes/s of decoded data\n", workers, workers, len(m.goEnc))
	fmt.Fprintf(w, "load average (1, 5, 15 min) at the start %s, at the end %s\n\n", load0, loadAvg())
	m.reportRates(w)
	m.reportCPU(w)
	fmt.Fprintln(w)
	t := NewTable(w)
	t.Row("target", "measured", "wanted", "")
	for _, g := range m.targets(total) {
		t.Row(g.Name, g.Got, g.Want, g.Verdict())
	}
	t.Flush()
}

// reportRates prints each side's rate.
func (m benchCompressRuns) reportRates(w io.Writer) {
	t := NewTable(w)
	row := func(name string, v []float64) {
		med, lo, hi := Median(v)
		t.Row(name, fmt.Sprintf("%.2f GB/s [%.2f-%.2f]", med, lo, hi))
	}
	row("Blosc(lz4, 5, shuffle) encode, numcodecs", m.cEnc)
	row("Blosc(lz4, 5, shuffle) encode, zfuse pool", m.goEnc)
	row("copy into Blosc-lz4, zarr-python zarr.copy", m.pyCopy)
	row("copy into Blosc-lz4, zfuse compress", m.zCopy)
	row(fmt.Sprintf("the same, %d parts at once, then --finish", m.parts), m.zParts)
	if len(m.s3Copy) > 0 {
		row("the same into S3 (versitygw, 127.0.0.1)", m.s3Copy)
		row(fmt.Sprintf("the same into S3, %d parts at once, then --finish", m.parts), m.s3Parts)
	}
	t.Flush()
}

// reportCPU prints where the time goes, on a machine whose cores the
// gateway shares.
func (m benchCompressRuns) reportCPU(w io.Writer) {
	med := func(v []float64) string {
		if len(v) == 0 {
			return "-"
		}
		return FormatRange(Median(v))
	}
	fmt.Fprintf(w, "\nCPU seconds per GiB, median [min-max]: zfuse into a directory %s, in %d parts %s", med(m.cpu[0]), m.parts, med(m.cpu[1]))
	if len(m.s3Copy) > 0 {
		fmt.Fprintf(w, "; into S3 %s, in parts %s; versitygw receiving it %s, in parts %s", med(m.cpu[2]), med(m.cpu[3]), med(m.gwCPU[0]), med(m.gwCPU[1]))
	}
	fmt.Fprintln(w)
}

// targets judges the encoder and zfuse compress against the C libraries
// and zarr-python. Speed ratios pair the two sides of each round (the
// same load), and their median and range are reported.
func (m benchCompressRuns) targets(total int64) []Target {
	ratioC, ratioGo := float64(total)/float64(m.cLZ4), float64(total)/float64(m.goLZ4)
	zC, zGo := float64(total)/float64(m.cZstd), float64(total)/float64(m.goZstd)
	paired := func(name string, a, b []float64, want float64) Target {
		med, lo, hi := Paired(a, b)
		return Target{Name: name, Got: FormatRatio(med, lo, hi), Want: fmt.Sprintf(">= %gx", want), OK: med >= want}
	}
	ratio := func(name string, got, want float64) Target {
		return Target{Name: name, Got: fmt.Sprintf("%.4f", got), Want: fmt.Sprintf(">= %.2f", want), OK: got >= want}
	}
	out := []Target{
		paired("Blosc-lz4 encode, zfuse / numcodecs (per round)", m.goEnc, m.cEnc, 2),
		ratio(fmt.Sprintf("Blosc-lz4 ratio, zfuse %.4f / c-blosc %.4f", ratioGo, ratioC), ratioGo/ratioC, 0.98),
		ratio(fmt.Sprintf("Zstd(3) ratio, zfuse %.4f / libzstd %.4f", zGo, zC), zGo/zC, 0.95),
		paired("zfuse compress / zarr-python copy (per round)", m.zCopy, m.pyCopy, 2),
		paired(fmt.Sprintf("zfuse compress, %d parts / one process (per round)", m.parts), m.zParts, m.zCopy, 0.9),
	}
	if len(m.s3Copy) > 0 {
		out = append(out,
			paired("zfuse compress into S3 / into a directory (per round)", m.s3Copy, m.zCopy, 0.7),
			paired(fmt.Sprintf("the same, %d parts, into S3 / into a directory (per round)", m.parts), m.s3Parts, m.zParts, 0.7))
	}
	return out
}
