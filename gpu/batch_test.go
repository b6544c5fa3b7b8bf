package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/testutil"
)

// A chunk is one test input: encoded bytes, the decoder's room (cap of
// Dst), and a name for messages.
type chunk struct {
	name string
	src  []byte
	room int
}

// jobsFor makes a fresh job per chunk.
func jobsFor(chunks []chunk) []codec.Job {
	jobs := make([]codec.Job, len(chunks))
	for i, c := range chunks {
		jobs[i] = codec.Job{Src: c.src, Dst: make([]byte, 0, c.room)}
	}
	return jobs
}

// agree decodes chunks with bd and with codec.Batch(d) and fails unless
// they agree chunk for chunk: both succeed with the same bytes, or both
// fail, with ErrTooLarge and ErrChecksum on the same chunks.
// It returns the number of chunks that decoded.
func agree(t testing.TB, bd codec.BatchDecoder, d codec.Decoder, chunks []chunk) int {
	t.Helper()
	got, want := jobsFor(chunks), jobsFor(chunks)
	if err := bd.DecodeBatch(context.Background(), got); err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	if err := codec.Batch(d).DecodeBatch(context.Background(), want); err != nil {
		t.Fatalf("codec.Batch: %v", err)
	}
	ok := 0
	for i, c := range chunks {
		g, w := got[i], want[i]
		switch {
		case (g.Err == nil) != (w.Err == nil):
			t.Errorf("%s: gpu err %v, cpu err %v", c.name, g.Err, w.Err)
		case w.Err != nil:
			for _, e := range []error{codec.ErrTooLarge, codec.ErrChecksum} {
				if errors.Is(w.Err, e) != errors.Is(g.Err, e) {
					t.Errorf("%s: gpu err %v, cpu err %v", c.name, g.Err, w.Err)
				}
			}
			if !errors.Is(g.Err, codec.ErrCorrupt) && !errors.Is(g.Err, codec.ErrTooLarge) && !errors.Is(g.Err, codec.ErrChecksum) {
				t.Errorf("%s: gpu err %v matches none of ErrCorrupt, ErrTooLarge, ErrChecksum", c.name, g.Err)
			}
		case !bytes.Equal(g.Dst, w.Dst):
			t.Errorf("%s: gpu and cpu bytes differ (len %d vs %d)", c.name, len(g.Dst), len(w.Dst))
		case cap(g.Dst) != c.room:
			t.Errorf("%s: Dst was reallocated", c.name)
		default:
			ok++
		}
	}
	return ok
}

// mustBatch returns g.Batch(d) and fails if d has no GPU path.
func mustBatch(t testing.TB, g *Decoder, d codec.Decoder) codec.BatchDecoder {
	t.Helper()
	bd, ok := g.Batch(d)
	if !ok {
		t.Fatalf("%T has no GPU path", d)
	}
	return bd
}

// bloscRoom is the decoded size a Blosc header announces (0 if none).
func bloscRoom(src []byte) int {
	if len(src) < 16 {
		return 0
	}
	return int(int32(binary.LittleEndian.Uint32(src[4:])))
}

// cbloscChunks reads the c-blosc compat buffers: all lz4 and lz4hc ones,
// and the 1.18.0 ones of the other compressors (for the CPU hand-off).
func cbloscChunks(t testing.TB) []chunk {
	dir := testutil.Conformance(t, "c-blosc/compat")
	paths, _ := filepath.Glob(filepath.Join(dir, "*lz4*.cdata"))
	others, _ := filepath.Glob(filepath.Join(dir, "blosc-1.18.0-*.cdata"))
	for _, p := range others {
		if !strings.Contains(p, "lz4") {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		t.Fatalf("no .cdata in %s", dir)
	}
	var out []chunk
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, chunk{name: filepath.Base(p), src: b, room: 4_000_000})
	}
	return out
}

// fixtureChunks reads numcodecs/fixture/<id>/codec.*/encoded.*.dat; the
// room is what the data announces (Blosc header, LZ4 prefix).
func fixtureChunks(t testing.TB, id string) []chunk {
	dir := filepath.Join(testutil.Conformance(t, "numcodecs/fixture"), id)
	paths, _ := filepath.Glob(filepath.Join(dir, "codec.*", "encoded.*.dat"))
	if len(paths) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	sort.Strings(paths)
	var out []chunk
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		room := bloscRoom(b)
		if id == "lz4" && len(b) >= 4 {
			room = int(binary.LittleEndian.Uint32(b))
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, chunk{name: id + "/" + rel, src: b, room: room})
	}
	return out
}

// count returns how many chunks satisfy pred.
func count(chunks []chunk, pred func(chunk) bool) int {
	n := 0
	for _, c := range chunks {
		if pred(c) {
			n++
		}
	}
	return n
}

func isLZ4Blosc(c chunk) bool {
	return len(c.src) >= 16 && c.src[2]>>5 == 1 && c.src[2]&0x02 == 0
}

// TestEmulatedCBlosc: the c-blosc 1.3–1.18 compat buffers (lz4 and lz4hc
// with shuffle and bitshuffle, split and not) decode on the emulated GPU
// exactly as on the CPU; the other compressors go to the CPU inside the
// same batch.
func TestEmulatedCBlosc(t *testing.T) {
	chunks := cbloscChunks(t)
	g := newEmulated(Config{SliceBytes: 8 << 20})
	if n := agree(t, mustBatch(t, g, codec.Blosc{}), codec.Blosc{}, chunks); n != len(chunks) {
		t.Errorf("%d of %d decoded", n, len(chunks))
	}
	lz4 := count(chunks, isLZ4Blosc)
	if st := g.Stats(); st.GPUJobs != int64(lz4) || st.CPUJobs != int64(len(chunks)-lz4) || lz4 < 10 {
		t.Errorf("stats %+v: want %d lz4 chunks on the GPU, %d on the CPU", st, lz4, len(chunks)-lz4)
	}
}

// TestEmulatedNumcodecsFixtures: numcodecs' own backward-compatibility
// fixtures for blosc (13 configurations, lz4 at clevel 0–9 with every
// shuffle, and other compressors) and lz4.
func TestEmulatedNumcodecsFixtures(t *testing.T) {
	for _, c := range []struct {
		id string
		d  codec.Decoder
	}{{"blosc", codec.Blosc{}}, {"lz4", codec.LZ4{}}} {
		t.Run(c.id, func(t *testing.T) {
			chunks := fixtureChunks(t, c.id)
			g := newEmulated(Config{SliceBytes: 1 << 20, Streams: 2})
			if n := agree(t, mustBatch(t, g, c.d), c.d, chunks); n != len(chunks) {
				t.Errorf("%d of %d decoded", n, len(chunks))
			}
			if st := g.Stats(); st.GPUJobs < int64(len(chunks))/3 {
				t.Errorf("only %d of %d chunks on the GPU", st.GPUJobs, len(chunks))
			}
		})
	}
}

// goChunks returns Blosc-LZ4 chunks from the Go test encoder with every
// combination of typesize, shuffle, block size and split, of lengths that
// leave leftover blocks and tails.
func goChunks(t testing.TB, r *rand.Rand, small bool) []chunk {
	var out []chunk
	lens := []int{128, 1000, 4096, 65536, 100003}
	if small {
		lens = []int{128, 1000, 4097, 40000}
	}
	for _, ts := range []int{1, 2, 4, 8, 3, 16, 17} {
		for _, shuffle := range []int{0, 1, 2} {
			for _, n := range lens {
				for _, bs := range []int{0, 16384, 65536} {
					data := floatData(r, n)
					if r.IntN(2) == 0 {
						data = mixedData(r, n)
					}
					o := bloscOpts{typesize: ts, shuffle: shuffle, blocksize: bs - bs%ts, split: r.IntN(3) != 0}
					out = append(out, chunk{
						name: fmt.Sprintf("go ts%d shuffle%d len%d bs%d split%v", ts, shuffle, n, bs, o.split),
						src:  encodeBlosc(t, data, o), room: n,
					})
				}
			}
		}
	}
	return out
}

// TestEmulatedGoEncoded: many shapes of Blosc-LZ4 chunks, in batches that
// span several slices on two streams.
func TestEmulatedGoEncoded(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	chunks := goChunks(t, r, testing.Short())
	r.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
	g := newEmulated(Config{SliceBytes: 300 << 10, Streams: 2})
	if n := agree(t, mustBatch(t, g, codec.Blosc{}), codec.Blosc{}, chunks); n != len(chunks) {
		t.Errorf("%d of %d decoded", n, len(chunks))
	}
	st := g.Stats()
	if st.GPUJobs != int64(len(chunks)) || st.Slices < 3 {
		t.Errorf("stats %+v: want all %d chunks on the GPU in several slices", st, len(chunks))
	}
}

// TestEmulatedLZ4: numcodecs LZ4 chunks, including incompressible ones.
func TestEmulatedLZ4(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var chunks []chunk
	for _, n := range []int{1, 13, 100, 4096, 65536, 1 << 20} {
		for k, data := range [][]byte{mixedData(r, n), floatData(r, n), make([]byte, n)} {
			chunks = append(chunks, chunk{name: fmt.Sprintf("lz4 len%d kind%d", n, k), src: encodeLZ4(t, data), room: n})
		}
	}
	noise := make([]byte, 70000)
	for i := range noise {
		noise[i] = byte(r.IntN(256))
	}
	chunks = append(chunks, chunk{name: "lz4 noise", src: encodeLZ4(t, noise), room: len(noise)})
	g := newEmulated(Config{SliceBytes: 2 << 20})
	if n := agree(t, mustBatch(t, g, codec.LZ4{}), codec.LZ4{}, chunks); n != len(chunks) {
		t.Errorf("%d of %d decoded", n, len(chunks))
	}
	if st := g.Stats(); st.GPUJobs != int64(len(chunks)) {
		t.Errorf("stats %+v: want all %d on the GPU", st, len(chunks))
	}
}

// corrupt returns damaged copies of chunks: flipped bytes (anywhere, or in
// the header and block table), truncation, and a too-small room.
func corrupt(r *rand.Rand, chunks []chunk, n int) []chunk {
	var out []chunk
	for i := range n {
		c := chunks[r.IntN(len(chunks))]
		src := bytes.Clone(c.src)
		room := c.room
		var how string
		switch i % 5 {
		case 0:
			for range r.IntN(4) + 1 {
				src[r.IntN(len(src))] ^= byte(r.IntN(255) + 1)
			}
			how = "flip"
		case 1:
			k := r.IntN(min(len(src), 64))
			src[k] ^= byte(r.IntN(255) + 1)
			how = fmt.Sprintf("flip byte %d", k)
		case 2:
			src = src[:r.IntN(len(src))]
			how = "truncate"
		case 3:
			room = max(0, room-1-r.IntN(3))
			how = "short room"
		case 4:
			for k := len(src) / 2; k < len(src); k++ {
				src[k] = byte(r.IntN(256))
			}
			how = "noise tail"
		}
		out = append(out, chunk{name: fmt.Sprintf("%s (%s, case %d)", c.name, how, i), src: src, room: room})
	}
	return out
}

// TestEmulatedCorrupt: damaged chunks fail (or decode) exactly as on the
// CPU, never panic, and never disturb their neighbours in the batch.
func TestEmulatedCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	n := 1500
	if testing.Short() {
		n = 400
	}
	for _, c := range []struct {
		name   string
		d      codec.Decoder
		chunks []chunk
	}{
		{"blosc", codec.Blosc{}, goChunks(t, r, true)},
		{"lz4", codec.LZ4{}, func() []chunk {
			var out []chunk
			for _, n := range []int{50, 3000, 70000} {
				out = append(out, chunk{name: fmt.Sprintf("lz4 %d", n), src: encodeLZ4(t, mixedData(r, n)), room: n})
			}
			return out
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := corrupt(r, c.chunks, n)
			batch := append(bad, c.chunks...) // good chunks must survive bad neighbours
			r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			g := newEmulated(Config{SliceBytes: 1 << 20, Streams: 3})
			ok := agree(t, mustBatch(t, g, c.d), c.d, batch)
			if ok < len(c.chunks) || ok == len(batch) {
				t.Errorf("%d of %d decoded; want the %d good ones and some failures", ok, len(batch), len(c.chunks))
			}
			if st := g.Stats(); st.GPUJobs < int64(len(batch))/4 {
				t.Errorf("stats %+v: too few chunks reached the GPU path", st)
			}
		})
	}
}

// TestEmulatedNumcodecsPython: chunks written by numcodecs 0.11 (the c-blosc
// Debian ships) for lz4, lz4hc and, to check the CPU hand-off, zstd and
// blosclz, across shuffles, typesizes and block sizes; decoded bytes must
// equal the arrays Python wrote and the CPU's decode.
func TestEmulatedNumcodecsPython(t *testing.T) {
	testutil.NeedPython(t, "numcodecs", "numpy")
	if testing.Short() {
		t.Skip("-short: no Python fixtures")
	}
	dir := t.TempDir()
	cmd := exec.Command(testutil.Python, filepath.Join("testdata", "fixtures.py"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		testutil.Need(t, "numcodecs ("+strings.TrimSpace(string(out))+")", false)
	}
	blosc, lz4 := pyChunks(t, dir)
	if len(blosc) < 100 || len(lz4) < 5 {
		t.Fatalf("python wrote %d blosc and %d lz4 chunks", len(blosc), len(lz4))
	}
	g := newEmulated(Config{SliceBytes: 2 << 20, Streams: 2}) // the largest chunk is 1.6 MB
	if n := agree(t, mustBatch(t, g, codec.Blosc{}), codec.Blosc{}, blosc); n != len(blosc) {
		t.Errorf("blosc: %d of %d decoded", n, len(blosc))
	}
	if n := agree(t, mustBatch(t, g, codec.LZ4{}), codec.LZ4{}, lz4); n != len(lz4) {
		t.Errorf("lz4: %d of %d decoded", n, len(lz4))
	}
	lz4Blosc := count(blosc, isLZ4Blosc)
	if st := g.Stats(); st.GPUJobs != int64(lz4Blosc+len(lz4)) || lz4Blosc < 50 {
		t.Errorf("stats %+v: want %d chunks on the GPU", st, lz4Blosc+len(lz4))
	}
}

// pyChunks reads the chunks testdata/fixtures.py wrote into dir, checking
// that the CPU decodes each to the array bytes Python wrote beside it.
func pyChunks(t testing.TB, dir string) (blosc, lz4 []chunk) {
	t.Helper()
	encs, _ := filepath.Glob(filepath.Join(dir, "*", "*.enc"))
	for _, path := range encs {
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(path), "array.raw"))
		if err != nil {
			t.Fatal(err)
		}
		enc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(dir, path)
		c := chunk{name: name, src: enc, room: len(raw)}
		var d codec.Decoder = codec.Blosc{}
		if strings.HasPrefix(filepath.Base(path), "numlz4") {
			d = codec.LZ4{}
			lz4 = append(lz4, c)
		} else {
			blosc = append(blosc, c)
		}
		// The CPU decode equals Python's array: agree() then checks the GPU.
		if got, err := codec.DecodeFull(d, make([]byte, 0, len(raw)), enc); err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%s: cpu decode differs from numcodecs' input (%v)", name, err)
		}
	}
	return blosc, lz4
}

// TestEmulatedConcurrent runs batches from several goroutines on one
// Decoder with fewer slots than slices (run with -race).
func TestEmulatedConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	chunks := goChunks(t, r, true)
	g := newEmulated(Config{SliceBytes: 200 << 10, Streams: 2})
	bd := mustBatch(t, g, codec.Blosc{})
	var wg sync.WaitGroup
	for k := range 4 {
		part := chunks[k*len(chunks)/4 : (k+1)*len(chunks)/4]
		wg.Go(func() {
			if n := agree(t, bd, codec.Blosc{}, part); n != len(part) {
				t.Errorf("goroutine %d: %d of %d decoded", k, n, len(part))
			}
		})
	}
	wg.Wait()
}

// TestEmulatedCancel: a cancelled context fails every job with its error.
func TestEmulatedCancel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	chunks := goChunks(t, r, true)[:20]
	g := newEmulated(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	jobs := jobsFor(chunks)
	if err := mustBatch(t, g, codec.Blosc{}).DecodeBatch(ctx, jobs); !errors.Is(err, context.Canceled) {
		t.Fatalf("DecodeBatch = %v, want context.Canceled", err)
	}
	for i, j := range jobs {
		if !errors.Is(j.Err, context.Canceled) {
			t.Errorf("job %d: err %v", i, j.Err)
		}
	}
}

// failEngine is the emulated engine with a device that fails every run.
type failEngine struct{ emuEngine }

var errFakeDevice = errors.New("fake device failure")

func (*failEngine) run(*slot, *slice) error { return errFakeDevice }

// TestDeviceFailureFallsBack: when the device fails, the slice is decoded
// on the CPU, the results are still right, and later batches skip the GPU.
func TestDeviceFailureFallsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	chunks := goChunks(t, r, true)[:40]
	g := newDecoder(Config{SliceBytes: 100 << 10}.withDefaults(), &failEngine{}, Device{Name: "failing"})
	bd := mustBatch(t, g, codec.Blosc{})
	for range 2 {
		if n := agree(t, bd, codec.Blosc{}, chunks); n != len(chunks) {
			t.Errorf("%d of %d decoded", n, len(chunks))
		}
	}
	if !errors.Is(g.failed(), errFakeDevice) {
		t.Errorf("failed() = %v", g.failed())
	}
	if st := g.Stats(); st.GPUJobs != 0 || st.Batches != 1 {
		t.Errorf("stats %+v: want one GPU attempt, no GPU jobs", st)
	}
}

// TestSliceLayout checks the staging layout arithmetic on a hand-made
// batch: regions aligned and disjoint, every job's streams and blocks
// inside its own output, and the packed descriptors read back.
func TestSliceLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	chunks := goChunks(t, r, true)
	jobs := jobsFor(chunks)
	var plans []jobPlan
	for i := range jobs {
		p, ok := planJob(pipeBlosc, i, &jobs[i], 1<<20)
		if !ok {
			t.Fatalf("%s: not GPU-eligible", chunks[i].name)
		}
		plans = append(plans, p)
	}
	inCap, outCap := 512<<10, 256<<10
	slices := sliceJobs(plans, inCap, outCap)
	seen := 0
	for _, s := range slices {
		if s.inLen() > inCap || s.outSize() > outCap {
			t.Fatalf("slice needs %d/%d bytes, caps %d/%d", s.inLen(), s.outSize(), inCap, outCap)
		}
		for _, off := range []int{s.blkOff(), s.srcOff(), s.outOff()} {
			if off%align != 0 {
				t.Errorf("region at %d not aligned", off)
			}
		}
		in := make([]byte, s.inLen())
		s.pack(in, 0, len(s.jobs))
		le := binary.LittleEndian
		for i, p := range s.jobs {
			seen++
			if p.job != plans[seen-1].job {
				t.Fatalf("jobs out of order")
			}
			for k, st := range p.streams {
				e := in[(s.streamAt[i]+k)*descSize:]
				if got := le.Uint64(e[8:]); got != uint64(s.outAt[i]+st.dstOff) || st.dstOff+st.dstLen > p.out {
					t.Fatalf("stream dst %d outside job output", got)
				}
				if st.srcOff+st.srcLen > len(p.src) {
					t.Fatalf("stream src outside job source")
				}
				so := le.Uint64(e[0:])
				if !bytes.Equal(in[s.srcOff()+int(so):][:st.srcLen], p.src[st.srcOff:][:st.srcLen]) {
					t.Fatalf("packed source bytes differ")
				}
				if int32(le.Uint32(e[24:])) != statusNotRun {
					t.Fatalf("status not preset")
				}
			}
		}
	}
	if seen != len(plans) {
		t.Fatalf("%d of %d jobs in slices", seen, len(plans))
	}
}
