package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zfuse/zfuse/internal/bytesize"
)

// zfuse compress --finish SOURCE DEST, once every part of a split job
// has run: it plans the job as the parts did, and checks, before writing
// anything, that every part's record is there, says its share is all
// written, and planned every array as this plan does; then that DEST
// holds, in each part's share of each array, exactly the objects (count
// and bytes) the part recorded. Only then does it write the metadata,
// arrays' first, groups' and consolidated metadata last, remove the part
// records, and print the job's summary. Run again after a failure, it
// does the same: it never half-finishes a job.

// finish checks the parts of the job in DEST and writes its metadata.
func (c *copier) finish(ctx context.Context, p *compressPlan, w io.Writer) error {
	start := time.Now()
	n := c.held.n
	var problems []string
	recs := make([]*runRecord, n)
	for k := range n {
		q := part{k, n}
		r := c.held.parts[k]
		recs[k] = r
		switch {
		case r == nil:
			problems = append(problems, fmt.Sprintf("part %s has not run: DEST holds no %s", q, partFile(q)))
			continue
		case r.Done == nil:
			problems = append(problems, fmt.Sprintf("part %s has not written its whole share: it started at %s and is running, or stopped; run it again with --resume", q, r.Started.Format(time.RFC3339)))
		}
		for _, pa := range p.arrays {
			prev, ok := r.files(pa.path)
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("part %s has no array %s: it ran with another SOURCE", q, pa.path))
			case !sameFiles(prev, pa.files):
				problems = append(problems, fmt.Sprintf("part %s wrote %s with other settings (%s)", q, pa.path, filesDiff(prev, pa.files)))
			}
		}
	}
	if len(problems) == 0 {
		var err error
		if problems, err = c.checkShares(ctx, p, recs); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("--finish: DEST %s is not ready, nothing was written:\n  %s", c.dest, strings.Join(problems, "\n  "))
	}
	// What killed parts left half-written (none is running now).
	if err := c.dst.Clean(ctx, func(string) bool { return true }); err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	for _, pa := range p.arrays {
		if err := c.writeFiles(ctx, pa.path, pa.files); err != nil {
			return err
		}
	}
	if err := c.writeGroups(ctx, p); err != nil {
		return err
	}
	for k := range n {
		if err := c.dst.RemoveKey(ctx, partFile(part{k, n})); err != nil {
			return fmt.Errorf("DEST: %w", err)
		}
	}
	return c.jobSummary(w, p, recs, time.Since(start))
}

// checkShares lists every array in DEST and compares the objects in each
// part's share with what the part recorded; it returns what differs.
func (c *copier) checkShares(ctx context.Context, p *compressPlan, recs []*runRecord) ([]string, error) {
	n := len(recs)
	shares := jobShares(p, n)
	var problems []string
	for i, pa := range p.arrays {
		got := make([]shareStats, n)
		err := c.dst.Walk(ctx, pa.path, func(key string, size int64) error {
			under, rel := pathRel(key, pa.path)
			j := objectIndex(pa, rel)
			if !under || j < 0 || isRecord(key) {
				return nil
			}
			k := sort.Search(n, func(k int) bool { return shares[i][k].hi > j }) // the shares are runs in order...
			if pa.enc == nil {
				k = slices.IndexFunc(shares[i], func(s share) bool { return s.has(j) }) // ...but not an array copied as stored
			}
			if k >= 0 && k < n && shares[i][k].has(j) {
				got[k].Objects++
				got[k].Bytes += size
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("DEST: %w", err)
		}
		for k := range n {
			if shares[i][k].lo == shares[i][k].hi {
				continue
			}
			want := recs[k].Done.Arrays[pa.path]
			if got[k].Objects != want.Objects || got[k].Bytes != want.Bytes {
				problems = append(problems, fmt.Sprintf("%s: part %s wrote %d objects (%d bytes) of its share, DEST holds %d of them (%d bytes); run the part again with --resume",
					pa.path, part{k, n}, want.Objects, want.Bytes, got[k].Objects, got[k].Bytes))
			}
		}
	}
	return problems, nil
}

// isRecord reports whether key is the record of a run or a part.
func isRecord(key string) bool {
	_, ok := parsePartFile(key)
	return ok || key == runFile
}

// jobSummary prints the summary of a split job from its parts' records:
// one line per array, the parts' counts added up, with BYTES IN the
// decoded size of the chunks DEST holds (kept chunks, which an earlier run
// of a part wrote, at their decoded size), BYTES OUT their stored size and
// TIME the time the parts' last runs spent on the array, summed; one line
// per part; and the job's ratio and time, from the first part's first
// start to the last part's end.
func (c *copier) jobSummary(w io.Writer, p *compressPlan, recs []*runRecord, finish time.Duration) error {
	c.stats = make([]*arrayStats, len(p.arrays))
	partIn := make([]int64, len(recs))
	for i, pa := range p.arrays {
		st := &arrayStats{}
		for k, r := range recs {
			s := r.Done.Arrays[pa.path]
			in := s.In
			if pa.enc != nil {
				in += s.Kept * pa.enc.Array().ChunkLen()
			}
			partIn[k] += in
			st.written.Add(s.Written)
			st.empty.Add(s.Empty)
			st.kept.Add(s.Kept)
			st.in.Add(in)
			st.out.Add(s.Bytes)
			st.took += time.Duration(s.Took * float64(time.Second))
		}
		c.stats[i] = st
	}
	if err := c.summary(w, p); err != nil {
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
		fmt.Fprintf(w, "part %s: %d objects, %s in, %s out, ratio %s; its last run took %s\n", part{k, len(recs)}, pobjs,
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
