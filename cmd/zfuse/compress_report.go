package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/zfuse/zfuse/compress"
	"github.com/zfuse/zfuse/internal/bytesize"
)

// A compressProgress counts a run's work as it goes, for its progress
// report. It is safe for concurrent use.
type compressProgress struct {
	chunks, bytes int64 // the work: new chunks and their decoded bytes
	start         time.Time

	done, in, out atomic.Int64 // done: new chunks (written, left out or kept), bytes in and out
}

// newCompressProgress starts reporting on w the work of a run, or of part
// prt, of chunks new chunks holding bytes decoded bytes (mode: --progress).
func newCompressProgress(w io.Writer, mode string, chunks, bytes int64, prt compress.Part) (*compressProgress, *progress) {
	c := &compressProgress{chunks: chunks, bytes: bytes, start: time.Now()}
	name, label := "compress", ""
	if prt.N > 0 {
		name, label = "compress part "+prt.String(), "part "+prt.String()
	}
	return c, startProgress(w, mode, name, label, "#", c.state)
}

// add counts chunks done, with their bytes in and out (compress.Config.Progress).
func (c *compressProgress) add(chunks, in, out int64) {
	c.done.Add(chunks)
	c.in.Add(in)
	c.out.Add(out)
}

// state is the share of the chunks done, and the state in words:
// " 41%  420/1024 chunks  420 MiB in, 100 MiB out  0.85 GB/s  ETA 1m02s".
func (c *compressProgress) state() (float64, string) {
	n, in := c.done.Load(), c.in.Load()
	frac := 1.0
	if c.chunks > 0 {
		frac = float64(n) / float64(c.chunks)
	}
	el := time.Since(c.start)
	rate := float64(in) / max(el.Seconds(), 1e-9) / 1e9
	eta := "-"
	if frac > 0 && frac < 1 {
		eta = (time.Duration(float64(el) * (1 - frac) / frac)).Round(time.Second).String()
	}
	return frac, fmt.Sprintf("%3.0f%%  %d/%d chunks  %s in, %s out  %.2f GB/s  ETA %s",
		100*frac, n, c.chunks, bytesize.Format(in), bytesize.Format(c.out.Load()), rate, eta)
}

// summary prints one line per array and the total: chunks written, left
// out (fill value or missing) and kept (--resume), bytes in (decoded) and
// out (stored), ratio, time and rate; stats are by p.Arrays index.
func summary(w io.Writer, p *compress.Plan, stats []compress.Stats, verify bool, prt compress.Part) error {
	if err := summaryTable(w, p, stats); err != nil {
		return err
	}
	var notes []string
	var verified, stored int64
	for i, pa := range p.Arrays {
		if !stats[i].Mine {
			continue // another part's
		}
		if len(pa.Skipped) > 0 {
			notes = append(notes, fmt.Sprintf("%s: written without %s (%s: it encodes integers stored as themselves)",
				pa.Path, strings.Join(pa.Skipped, ","), pa.Src.DType))
		}
		verified += stats[i].Verified
		if pa.Enc == nil {
			stored++
		}
	}
	if verify {
		line := fmt.Sprintf("verified: %d chunks read back from DEST, decoded and compared with the source (left-out chunks: found absent or the fill value): all equal", verified)
		if stored > 0 {
			line += fmt.Sprintf("; %d arrays copied as stored are not verified", stored)
		}
		notes = append(notes, line)
	}
	if prt.N > 0 {
		notes = append(notes, fmt.Sprintf("part %s of the job: its share is in DEST; once every part's is, zfuse compress --finish SOURCE DEST writes the metadata", prt))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// summaryTable prints the table of summary: a line per array of this
// process's and the total.
func summaryTable(w io.Writer, p *compress.Plan, stats []compress.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ARRAY\tFORMAT\tCHUNKS\tWRITTEN\tEMPTY\tKEPT\tBYTES IN\tBYTES OUT\tRATIO\tTIME\tGB/s")
	var tot compress.Stats
	for i, pa := range p.Arrays {
		s := stats[i]
		if !s.Mine {
			continue // another part's
		}
		tot.Took += s.Took
		if pa.Enc == nil {
			fmt.Fprintf(tw, "%s\tcopied as stored: %v\n", pa.Path, pa.Why)
			continue
		}
		d := pa.Enc.Array()
		format := fmt.Sprintf("v%d", d.Format)
		if d.Shard() != nil {
			format += " sharded"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\n", pa.Path, format, compress.Dims(d.Chunks),
			s.Written, s.Empty, s.Kept, bytesize.Format(s.In), bytesize.Format(s.Out),
			ratio(s.In, s.Out), s.Took.Round(time.Millisecond), float64(s.In)/max(s.Took.Seconds(), 1e-9)/1e9)
		tot.Written, tot.Empty, tot.Kept, tot.In, tot.Out = tot.Written+s.Written, tot.Empty+s.Empty, tot.Kept+s.Kept, tot.In+s.In, tot.Out+s.Out
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\n", tot.Written, tot.Empty, tot.Kept,
		bytesize.Format(tot.In), bytesize.Format(tot.Out), ratio(tot.In, tot.Out), tot.Took.Round(time.Millisecond),
		float64(tot.In)/max(tot.Took.Seconds(), 1e-9)/1e9)
	return tw.Flush()
}

// jobSummary prints the summary of a split job from its parts' records:
// one line per array, the parts' counts added up (compress.JobStats); one
// line per part; and the job's ratio and time, from the first part's
// first start to the last part's end.
func jobSummary(w io.Writer, p *compress.Plan, recs []*compress.Record, finish time.Duration) error {
	stats, partIn := compress.JobStats(p, recs)
	if err := summary(w, p, stats, false, compress.Part{}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var first, last time.Time
	var in, out, objs int64
	var busy time.Duration
	for k, r := range recs {
		var pout, pobjs int64
		for _, s := range r.Done.Arrays {
			pout += s.Bytes
			pobjs += s.Objects
		}
		took := time.Duration(r.Done.Took * float64(time.Second))
		fmt.Fprintf(w, "part %s: %d objects, %s in, %s out, ratio %s; its last run took %s\n", compress.Part{K: k, N: len(recs)}, pobjs,
			bytesize.Format(partIn[k]), bytesize.Format(pout), ratio(partIn[k], pout), took.Round(time.Millisecond))
		in, out, objs, busy = in+partIn[k], out+pout, objs+pobjs, busy+took
		if first.IsZero() || r.Started.Before(first) {
			first = r.Started
		}
		if r.Done.Ended.After(last) {
			last = r.Done.Ended
		}
	}
	wall := last.Sub(first)
	_, err := fmt.Fprintf(w, "job: %d parts, %d objects, %s in, %s out, ratio %s; %s from the first part's start to the last part's end, the parts' last runs summed %s; --finish %s\n",
		len(recs), objs, bytesize.Format(in), bytesize.Format(out), ratio(in, out), wall.Round(time.Millisecond),
		busy.Round(time.Millisecond), finish.Round(time.Millisecond))
	return err
}

func ratio(in, out int64) string {
	if out == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(in)/float64(out))
}
