package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// progressTotal is the work of a run: new chunks and their decoded bytes.
type progressTotal struct{ chunks, bytes int64 }

// A progress reports a run on stderr while it goes: a bar redrawn in
// place on a terminal, a plain line every 10 seconds (and at every tenth
// of the work) otherwise. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	mode  string // "bar", "plain" or "none"
	name  string // "compress", or "compress part K/N"
	total progressTotal
	start time.Time

	chunks, in, out atomic.Int64 // done: new chunks (written, left out or kept), bytes in and out

	stopOnce sync.Once
	done     chan struct{}
	wg       sync.WaitGroup
}

// newProgress starts reporting on w the work total of a run, or of part
// prt: mode "auto" is a bar when w is a terminal, plain lines otherwise.
func newProgress(w io.Writer, mode string, total progressTotal, prt part) *progress {
	if mode == "auto" {
		mode = "plain"
		if isTerminal(w) {
			mode = "bar"
		}
	}
	p := &progress{w: w, mode: mode, name: "compress", total: total, start: time.Now(), done: make(chan struct{})}
	if prt.n > 0 {
		p.name = "compress part " + prt.String()
	}
	if mode == "bar" || mode == "plain" {
		p.wg.Go(p.loop)
	}
	return p
}

func (p *progress) add(chunks, in, out int64) {
	p.chunks.Add(chunks)
	p.in.Add(in)
	p.out.Add(out)
}

func (p *progress) loop() {
	tick := 200 * time.Millisecond
	if p.mode == "plain" {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var lastLine time.Time
	lastTenth := int64(0)
	for {
		select {
		case <-p.done:
			if p.mode == "bar" {
				fmt.Fprintf(p.w, "\r%s\x1b[K\n", p.line())
			} else {
				fmt.Fprintf(p.w, "%s: %s\n", p.name, p.line())
			}
			return
		case now := <-t.C:
			if p.mode == "bar" {
				fmt.Fprintf(p.w, "\r%s\x1b[K", p.line())
				continue
			}
			tenth := int64(0)
			if p.total.chunks > 0 {
				tenth = 10 * p.chunks.Load() / p.total.chunks
			}
			if now.Sub(lastLine) >= 10*time.Second || tenth > lastTenth {
				fmt.Fprintf(p.w, "%s: %s\n", p.name, p.line())
				lastLine, lastTenth = now, tenth
			}
		}
	}
}

// line is the state in words: "[####      ] 41%  420/1024 chunks  420 MiB of 1.0 GiB  0.85 GB/s  ETA 1m02s".
func (p *progress) line() string {
	n, in := p.chunks.Load(), p.in.Load()
	frac := 1.0
	if p.total.chunks > 0 {
		frac = float64(n) / float64(p.total.chunks)
	}
	el := time.Since(p.start)
	rate := float64(in) / max(el.Seconds(), 1e-9) / 1e9
	eta := "-"
	if frac > 0 && frac < 1 {
		eta = (time.Duration(float64(el) * (1 - frac) / frac)).Round(time.Second).String()
	}
	bar := ""
	if p.mode == "bar" {
		w := int(frac * 30)
		bar = "[" + strings.Repeat("#", w) + strings.Repeat(" ", 30-w) + "] "
		if p.name != "compress" {
			bar = strings.TrimPrefix(p.name, "compress ") + " " + bar
		}
	}
	return fmt.Sprintf("%s%3.0f%%  %d/%d chunks  %s in, %s out  %.2f GB/s  ETA %s",
		bar, 100*frac, n, p.total.chunks, bytesize.Format(in), bytesize.Format(p.out.Load()), rate, eta)
}

// stop ends the reports (a bar gets its final state and a newline).
func (p *progress) stop() {
	p.stopOnce.Do(func() { close(p.done) })
	p.wg.Wait()
}

// summary prints one line per array and the total: chunks written, left
// out (fill value or missing) and kept (--resume), bytes in (decoded) and
// out (stored), ratio, time and rate.
func (c *copier) summary(w io.Writer, p *compressPlan) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ARRAY\tFORMAT\tCHUNKS\tWRITTEN\tEMPTY\tKEPT\tBYTES IN\tBYTES OUT\tRATIO\tTIME\tGB/s")
	var tot arrayStats
	var took time.Duration
	for i, pa := range p.arrays {
		s := c.stats[i]
		if c.part.n > 0 && c.shares[i].lo == c.shares[i].hi {
			continue // another part's
		}
		took += s.took
		if pa.enc == nil {
			fmt.Fprintf(tw, "%s\tcopied as stored: %v\n", pa.path, pa.why)
			continue
		}
		d := pa.enc.Array()
		format := fmt.Sprintf("v%d", d.Format)
		if d.Shard() != nil {
			format += " sharded"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\n", pa.path, format, dims(d.Chunks),
			s.written.Load(), s.empty.Load(), s.kept.Load(), bytesize.Format(s.in.Load()), bytesize.Format(s.out.Load()),
			ratio(s.in.Load(), s.out.Load()), s.took.Round(time.Millisecond), float64(s.in.Load())/max(s.took.Seconds(), 1e-9)/1e9)
		for _, v := range []struct {
			to   *atomic.Int64
			from int64
		}{{&tot.written, s.written.Load()}, {&tot.empty, s.empty.Load()}, {&tot.kept, s.kept.Load()}, {&tot.in, s.in.Load()}, {&tot.out, s.out.Load()}} {
			v.to.Add(v.from)
		}
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\n", tot.written.Load(), tot.empty.Load(), tot.kept.Load(),
		bytesize.Format(tot.in.Load()), bytesize.Format(tot.out.Load()), ratio(tot.in.Load(), tot.out.Load()), took.Round(time.Millisecond),
		float64(tot.in.Load())/max(took.Seconds(), 1e-9)/1e9)
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	var verified, stored int64
	for i, pa := range p.arrays {
		if c.part.n > 0 && c.shares[i].lo == c.shares[i].hi {
			continue // another part's
		}
		if len(pa.skipped) > 0 {
			notes = append(notes, fmt.Sprintf("%s: written without %s (%s: it encodes integers stored as themselves)",
				pa.path, strings.Join(pa.skipped, ","), pa.src.DType))
		}
		verified += c.stats[i].verified.Load()
		if pa.enc == nil {
			stored++
		}
	}
	if c.verify {
		line := fmt.Sprintf("verified: %d chunks read back from DEST, decoded and compared with the source (left-out chunks: found absent or the fill value): all equal", verified)
		if stored > 0 {
			line += fmt.Sprintf("; %d arrays copied as stored are not verified", stored)
		}
		notes = append(notes, line)
	}
	if c.part.n > 0 {
		notes = append(notes, fmt.Sprintf("part %s of the job: its share is in DEST; once every part's is, zfuse compress --finish SOURCE DEST writes the metadata", c.part))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

func ratio(in, out int64) string {
	if out == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(in)/float64(out))
}
