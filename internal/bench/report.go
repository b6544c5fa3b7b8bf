package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zfuse/zfuse/compress"
	"github.com/zfuse/zfuse/internal/bytesize"
)

// This file holds zfuse bench's results and its report: the matrix of
// medians with their ranges, the memory of the mounts, and the targets of
// the data-path issue.

// A cell is one line of the matrix.
type cell struct {
	chunk     string // "1MiB", "64KiB"
	codec     string // "blosc", "zstd"; "" for the uncompressed store
	reader    string // readGrid, ...
	via       string // viaMount, viaSelf, viaRaw
	serving   string // asked for (viaMount only)
	transport string // asked for (viaMount only)
}

// benchResults are the rates of every cell (Results), and what each
// cell's mounts used.
type benchResults struct {
	*Results[cell]
	mounts map[cell][]mountStats
}

func newBenchResults() *benchResults {
	return &benchResults{Results: NewResults[cell](), mounts: map[cell][]mountStats{}}
}

func (r *benchResults) addMount(c cell, st mountStats) { r.mounts[c] = append(r.mounts[c], st) }

// report prints the setting, the matrix, the mounts' memory and the
// targets.
func (b *bencher) report() {
	b.reportSetting()
	b.reportMatrix()
	b.reportRequests()
	b.reportRatios()
	b.reportFloor()
	b.reportTargets()
}

// reportSetting prints what was measured, how, and where.
func (b *bencher) reportSetting() {
	lf := b.lf
	fmt.Fprintf(b.out, "zfuse bench, %s: %s\n", b.start, machine())
	for _, set := range b.sets {
		ratio := func(name string) float64 {
			return float64(set.stored[storeRaw]) / float64(max(set.stored[name], 1))
		}
		fmt.Fprintf(b.out, "arrays %s: float32 %s, %d chunks of %s (%s); stored: blosc lz4 clevel 5 shuffle %s (ratio %.2f), zstd level 3 %s (ratio %.2f), uncompressed %s\n",
			set.name, compress.Dims(set.shape), len(set.keys), bytesize.Format(set.chunkLen), compress.Dims(set.chunks),
			bytesize.Format(set.stored[storeBlosc]), ratio(storeBlosc), bytesize.Format(set.stored[storeZstd]), ratio(storeZstd), bytesize.Format(set.stored[storeRaw]))
	}
	kra := "kernel default (not root)"
	if os.Geteuid() == 0 && lf.KernelReadahead > 0 {
		kra = bytesize.Exact(lf.KernelReadahead)
	}
	fmt.Fprintf(b.out, "mounts: --decoder %s, --workers %d, budgets decoded %s, compressed %s, readahead %s; kernel readahead %s; a fresh mount for each reader, epochs in the same mount\n",
		lf.Decoder, lf.Workers, bytesize.Exact(lf.Decoded), bytesize.Exact(lf.Compressed), bytesize.Exact(lf.Readahead), kra)
	fmt.Fprintf(b.out, "stores in the page cache throughout; file tool: open, read whole, close each chunk file; files-py: Python's open().read() of each; cat: cat(1) of every chunk file; zarr: zarr-python 2.13 plane by plane; dask: da.from_zarr(...).mean(); xarray: open_zarr(...).mean(); loader: PyTorch DataLoader, 2 workers, shuffled planes; npy: the array's .npy file (--as-npy) read whole; npy-map: its first eighth along axis 0 copied out of np.load(mmap_mode='r'); netcdf: netCDF4-python (netCDF-C) plane by plane, of the --as-nc file, raw: of a CDF-2 file on local disk\n")
	fmt.Fprintf(b.out, "floor: a minimal FUSE server (zfuse bench floor) with the mounts' FUSE options and kernel readahead, serving the chunk files' names and sizes from one buffer it holds (OPEN answered ENOSYS), for npy and npy-map one file of the .npy file's size and header; a fresh one for each reader\n")
	if b.http != nil {
		fmt.Fprintf(b.out, "zarr-http: zarr-python plane by plane from the bench's HTTP server on 127.0.0.1, %v before each answer: over HTTP itself (fsspec, aiohttp; the chunks of a plane concurrently), and through a zfuse mount of the URL\n", b.latency)
	}
	fmt.Fprintf(b.out, "load average (1, 5, 15 min) at the start %s, at the end %s\n", b.load, loadAvg())
	fmt.Fprintf(b.out, "memory: at the start %s; at the end %s (a first read fills the page cache with new pages)\n", b.memory[0], b.memory[1])
	fmt.Fprintf(b.out, "GB/s, median of %d rounds [lowest-highest]\n\n", b.runs)
}

// reportMatrix prints every cell's rate by epoch, and what its mounts
// used.
func (b *bencher) reportMatrix() {
	t := NewTable(b.out)
	t.Row(slices.Concat([]string{"chunks", "reader", "codec", "source"}, epochHeads(b.epochs), []string{"mount: serving, peak RSS + memfds + pushed, CPU", ""})...)
	for _, c := range b.res.Order {
		codec := c.codec
		if codec == "" {
			codec = "none"
		}
		t.Row(slices.Concat([]string{c.chunk, c.reader, codec, b.source(c)}, b.res.EpochCells(c, b.epochs), []string{mountCell(b.res.mounts[c]), ""})...)
	}
	t.Flush()
}

// source names where cell c read from: its via, and for a mount the
// serving path and transport asked for where more than one was.
func (b *bencher) source(c cell) string {
	var on []string
	if c.via == viaMount && len(b.servings) > 1 {
		on = append(on, c.serving)
	}
	if c.via == viaMount && len(b.transports) > 1 {
		on = append(on, c.transport)
	}
	if len(on) == 0 {
		return c.via
	}
	return c.via + "(" + strings.Join(on, ", ") + ")"
}

// reportRequests prints, for every cell read through a mount, the daemon
// requests per chunk read in each epoch (of its first round: the counts
// of one round are the same, request for request, but for the races of
// readahead), the most frequent first.
func (b *bencher) reportRequests() {
	fmt.Fprintf(b.out, "\ndaemon requests per chunk read, by epoch (round 1)\n\n")
	t := NewTable(b.out)
	t.Row(slices.Concat([]string{"chunks", "reader", "codec", "source"}, epochHeads(b.epochs), []string{""})...)
	for _, c := range b.res.Order {
		ms := b.res.mounts[c]
		if c.via != viaMount || len(ms) == 0 || len(ms[0].epochRequests) == 0 {
			continue
		}
		row := []string{c.chunk, c.reader, c.codec, b.source(c)}
		set := b.set(c.chunk)
		for e := range b.epochs {
			cellText := ""
			if e < len(ms[0].epochRequests) && set != nil {
				cellText = perChunk(ms[0].epochRequests[e], chunksRead(set, c.reader))
			}
			row = append(row, cellText)
		}
		t.Row(append(row, "")...)
	}
	t.Flush()
}

// set returns the store set of the chunk size name.
func (b *bencher) set(name string) *storeSet {
	for _, s := range b.sets {
		if s.name == name {
			return s
		}
	}
	return nil
}

// mountCell shows the mounts of a cell: the serving path, the highest peak
// of memory and the mean CPU time; "" for none.
func mountCell(ms []mountStats) string {
	if len(ms) == 0 {
		return ""
	}
	peak, cpu := int64(0), time.Duration(0)
	for _, m := range ms {
		peak = max(peak, m.hwm+m.memfdPeak)
		cpu += m.cpu
	}
	return fmt.Sprintf("%s, %s, %.2f s", ms[0].serving, bytesize.Format(peak), cpu.Seconds()/float64(len(ms)))
}

// epochHeads are the headings of n epoch columns.
func epochHeads(n int) []string {
	h := make([]string, n)
	for e := range h {
		h[e] = fmt.Sprintf("epoch %d", e+1)
	}
	return h
}

// reportTargets prints each target, as measured, and its verdict.
func (b *bencher) reportTargets() {
	fmt.Fprintln(b.out)
	t := NewTable(b.out)
	t.Row("target", "measured", "wanted", "", "")
	for _, g := range b.targets() {
		t.Row(g.Name, g.Got, g.Want, g.Verdict(), "")
	}
	t.Flush()
}

// targets compares the results with the targets of the data-path issue,
// on the Blosc-lz4 stores, for each serving path measured, then the
// memory of the mounts with the budget.
func (b *bencher) targets() []Target {
	var out []Target
	for _, serving := range b.servings {
		for _, transport := range b.transports {
			var on []string
			if len(b.servings) > 1 {
				on = append(on, serving)
			}
			if len(b.transports) > 1 {
				on = append(on, transport)
			}
			suffix := ""
			if len(on) > 0 {
				suffix = " (" + strings.Join(on, ", ") + ")"
			}
			for _, set := range b.sets {
				out = append(out, b.setTargets(set, serving, transport, suffix)...)
			}
		}
	}
	if t, ok := b.memoryTarget(); ok {
		out = append(out, t)
	}
	if t, ok := b.spreadTarget(); ok {
		out = append(out, t)
	}
	return out
}

// setTargets are the targets of the chunk size of set, read through
// mounts on serving; on ends their names.
func (b *bencher) setTargets(set *storeSet, serving, transport, on string) []Target {
	r := b.res
	var out []Target
	add := func(name string, a, base cell, e int, want float64) {
		med, lo, hi, ok := r.Ratio(a, base, e)
		if ok {
			out = append(out, Target{Name: name, Got: FormatRatio(med, lo, hi), Want: fmt.Sprintf(">= %.2fx", want), OK: med >= want})
		}
	}
	const codec = "blosc"
	ch := set.name
	mount := func(reader string) cell { return cell{ch, codec, reader, viaMount, serving, transport} }
	self := func(reader string) cell { return cell{ch, codec, reader, viaSelf, "", ""} }
	raw := func(reader string) cell { return cell{ch, "", reader, viaRaw, "", ""} }
	want := map[string][2]float64{"1MiB": {1.2, 2.0}, "64KiB": {0.8, 1.0}}[ch]
	if want[0] > 0 {
		add(ch+" zarr-python via mount / decoding itself, epoch 1"+on, mount(readZarr), self(readZarr), 0, want[0])
		add(ch+" zarr-python via mount / decoding itself, epoch 2"+on, mount(readZarr), self(readZarr), 1, want[1])
	}
	last := b.epochs - 1
	if last > 0 {
		add(fmt.Sprintf("%s zarr-python via mount / uncompressed direct, warm (epoch %d)%s", ch, last+1, on), mount(readZarr), raw(readZarr), last, 0.8)
	}
	add(ch+" DataLoader via mount / decoding itself, epoch 1"+on, mount(readLoader), self(readLoader), 0, 1.0)
	add(ch+" DataLoader via mount / decoding itself, epoch 3"+on, mount(readLoader), self(readLoader), 2, 1.1)
	add(ch+" dask mean via mount / decoding itself, cold"+on, mount(readDask), self(readDask), 0, 1.0)
	add(ch+" xarray mean via mount / decoding itself, cold"+on, mount(readXarray), self(readXarray), 0, 1.0)
	for _, reader := range b.readers {
		if t, ok := warmRequestsTarget(r.mounts[mount(reader)], set, reader); ok {
			t.Name = ch + " " + t.Name + on
			out = append(out, t)
		}
	}
	add(ch+" file tool via mount / uncompressed direct, cold"+on, mount(readGrid), raw(readGrid), 0, 0.25)
	add(ch+" file tool via mount / uncompressed direct, warm"+on, mount(readGrid), raw(readGrid), 1, 0.8)
	add(ch+" file tool, listing order / grid order, cold"+on, mount(readList), mount(readGrid), 0, 0.8)
	floor := func(reader string) cell { return cell{ch, "", reader, viaFloor, "", ""} }
	if want := map[string]float64{"1MiB": 1.0, "64KiB": 0.8}[ch]; want > 0 {
		add(ch+" file tool via mount / the FUSE floor, cold"+on, mount(readGrid), floor(readGrid), 0, want)
		add(ch+" file tool via mount / the FUSE floor, cold, listing order"+on, mount(readList), floor(readList), 0, want)
	}
	if ch == "1MiB" {
		add(ch+" Python open().read() via mount / the FUSE floor, cold"+on, mount(readPy), floor(readPy), 0, 1.0)
	}
	add(ch+" .npy file (--as-npy) / chunk files, read whole, cold"+on, mount(readNpy), mount(readGrid), 0, 0.8)
	if t, ok := mapTarget(r.mounts[mount(readMap)], set); ok {
		t.Name = ch + " " + t.Name + on
		out = append(out, t)
	}
	http := cell{ch, codec, readRemote, viaHTTP, "", ""}
	add(ch+" zarr-python via mount / over HTTP itself, epoch 1"+on, mount(readRemote), http, 0, 3)
	add(ch+" zarr-python via mount / over HTTP itself, epoch 2"+on, mount(readRemote), http, 1, 10)
	return out
}

// warmRequestsTarget is the target of a warm epoch's requests: the last
// epoch of reader through mounts ms makes at most 0.01 daemon requests a
// chunk, but for IOCTL (which the kernel sends for every ioctl on a FUSE
// file, whatever the daemon answered: Python's open() asks isatty). ok is
// false when no mount counted its epochs.
func warmRequestsTarget(ms []mountStats, set *storeSet, reader string) (t Target, ok bool) {
	var xs []float64
	for _, m := range ms {
		if len(m.epochRequests) < 2 {
			continue
		}
		var n int64
		for op, k := range m.epochRequests[len(m.epochRequests)-1] {
			if op != "IOCTL" {
				n += k
			}
		}
		xs = append(xs, float64(n)/float64(chunksRead(set, reader)))
	}
	if len(xs) == 0 {
		return t, false
	}
	med, lo, hi := Median(xs)
	return Target{
		Name: reader + " warm epoch: daemon requests a chunk, but IOCTL",
		Got:  fmt.Sprintf("%.3f [%.3f-%.3f]", med, lo, hi), Want: "<= 0.01", OK: med <= 0.01,
	}, true
}

// spreadTarget is the target of the rounds' spread: in every cell read
// through a mount, every epoch's slowest round is at least 0.7x the
// median; it names the cell and epoch where that is least so.
func (b *bencher) spreadTarget() (t Target, ok bool) {
	worst, at := 2.0, ""
	for _, c := range b.res.Order {
		if c.via != viaMount {
			continue
		}
		for e := range b.epochs {
			med, lo, _, ok := b.res.Epoch(c, e)
			if !ok || med <= 0 {
				continue
			}
			if r := lo / med; r < worst {
				worst, at = r, fmt.Sprintf("%s %s %s %s, epoch %d", c.chunk, c.reader, c.codec, b.source(c), e+1)
			}
		}
	}
	if at == "" || b.runs < 3 {
		return t, false
	}
	return Target{Name: "slowest round / median, the worst cell (" + at + ")", Got: fmt.Sprintf("%.2fx", worst), Want: ">= 0.70x", OK: worst >= 0.7}, true
}

// memoryTarget is the highest peak of memory of a mount (not the floor's)
// against the budget; ok is false when there were no mounts.
func (b *bencher) memoryTarget() (t Target, ok bool) {
	var peak int64
	var at string
	for c, ms := range b.res.mounts {
		if c.via != viaMount {
			continue // the floor
		}
		for _, m := range ms {
			if v := m.hwm + m.memfdPeak; v > peak {
				peak, at = v, fmt.Sprintf("%s %s %s %s", c.chunk, c.reader, c.codec, m.serving)
			}
		}
	}
	if at == "" {
		return t, false
	}
	limit := b.lf.memory()
	return Target{Name: "peak RSS + memfds + pushed of a mount (" + at + ")", Got: bytesize.Format(peak),
		Want: "<= " + bytesize.Format(limit) + " (decoded + compressed + readahead + the mount's own " + bytesize.Format(b.lf.Own) + ")", OK: peak <= limit}, true
}

// reportRatios prints each mount's rate ÷ each baseline measured beside
// it, epoch by epoch: the uncompressed store read directly (raw), the
// reader decoding itself (self: zarr-python and the DataLoader; http:
// zarr-python over HTTP for zarr-http), and the FUSE floor.
func (b *bencher) reportRatios() {
	r := b.res
	fmt.Fprintf(b.out, "\nthe mount ÷ each baseline: median of the rounds' ratios [lowest-highest]\n\n")
	t := NewTable(b.out)
	t.Row(slices.Concat([]string{"chunks", "reader", "codec", "source", "÷"}, epochHeads(b.epochs), []string{""})...)
	for _, c := range r.Order {
		if c.via != viaMount {
			continue
		}
		for _, base := range []cell{
			{c.chunk, "", c.reader, viaRaw, "", ""},
			{c.chunk, c.codec, c.reader, viaSelf, "", ""},
			{c.chunk, c.codec, c.reader, viaHTTP, "", ""},
			{c.chunk, "", c.reader, viaFloor, "", ""},
		} {
			if _, ok := r.Rates[base]; ok {
				t.Row(slices.Concat([]string{c.chunk, c.reader, c.codec, b.source(c), base.via}, r.RatioCells(c, base, b.epochs), []string{""})...)
			}
		}
	}
	t.Flush()
}

// reportFloor prints the FUSE floor's cold file reads as files per second
// and the time per file (its LOOKUP, READs and close: one READ round trip
// for a file of up to 1 MiB), the figures to compare FUSE servers by.
func (b *bencher) reportFloor() {
	var lines []string
	for _, set := range b.sets {
		for _, reader := range []string{readGrid, readList} {
			med, lo, hi, ok := b.res.Epoch(cell{set.name, "", reader, viaFloor, "", ""}, 0)
			if !ok || med <= 0 || lo <= 0 {
				continue
			}
			files := func(gbs float64) float64 { return gbs * 1e9 / float64(set.chunkLen) }
			lines = append(lines, fmt.Sprintf("%s %s: %.0f files/s [%.0f-%.0f], %.3f ms a file",
				set.name, reader, files(med), files(lo), files(hi), 1e3/files(med)))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b.out, "\nthe FUSE floor, cold (epoch 1): %s\n", strings.Join(lines, "; "))
	}
}

// mapTarget is the target of reading the first eighth of the array along
// axis 0 through a memory map of its .npy file (readMap): the chunks the
// mounts read from the store are at most twice those that part covers,
// median over the mounts ms. ok is false when there were none.
func mapTarget(ms []mountStats, set *storeSet) (t Target, ok bool) {
	if len(ms) == 0 || len(set.shape) == 0 {
		return t, false
	}
	rows := max(1, set.shape[0]/8) // as bench.py npymap reads
	covered := int64((rows + set.chunks[0] - 1) / set.chunks[0])
	for i := 1; i < len(set.shape); i++ {
		covered *= int64((set.shape[i] + set.chunks[i] - 1) / set.chunks[i])
	}
	xs := make([]float64, len(ms))
	for i, m := range ms {
		xs[i] = float64(m.storeReads) / float64(covered)
	}
	med, lo, hi := Median(xs)
	return Target{
		Name: "1/8 through np.load(mmap_mode='r'): chunks read from the store / chunks it covers",
		Got:  fmt.Sprintf("%s of %d", FormatRatio(med, lo, hi), covered),
		Want: "<= 2.00x", OK: med <= 2,
	}, true
}
