package compress

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// zfuse compress --finish SOURCE DEST, once every part of a split job
// has run: it plans the job as the parts did, and checks, before writing
// anything, that every part's record is there, says its share is all
// written, and planned every array as this plan does; then that DEST
// holds, in each part's share of each array, exactly the objects (count
// and bytes) the part recorded. Only then does it write the metadata,
// arrays' first, groups' and consolidated metadata last, remove the part
// records; cmd prints the job's summary. Run again after a failure, it
// does the same: it never half-finishes a job.

// Finish checks the parts of the job in cfg.Dst (cfg.Held holds their
// records) and writes its metadata; it returns the parts' records, by K,
// for the job's summary. Only cfg's Log, Dst, Dest and Held are used.
func Finish(ctx context.Context, p *Plan, cfg Config) ([]*Record, error) {
	c := newCopier(p, cfg)
	recs, problems := c.checkParts(p)
	if len(problems) == 0 {
		var err error
		if problems, err = c.checkShares(ctx, p, recs); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("--finish: DEST %s is not ready, nothing was written:\n  %s", c.dest, strings.Join(problems, "\n  "))
	}
	// What killed parts left half-written (none is running now).
	if err := c.dst.Clean(ctx, func(string) bool { return true }); err != nil {
		return nil, fmt.Errorf("DEST: %w", err)
	}
	for _, pa := range p.Arrays {
		if err := c.writeFiles(ctx, pa.Path, pa.Files); err != nil {
			return nil, err
		}
	}
	if err := c.writeGroups(ctx, p); err != nil {
		return nil, err
	}
	for k := range len(recs) {
		if err := c.dst.RemoveKey(ctx, partFile(Part{k, len(recs)})); err != nil {
			return nil, fmt.Errorf("DEST: %w", err)
		}
	}
	return recs, nil
}

// checkParts returns the part records of the job, by K, and what is
// wrong with them: a part that has not run or not finished its share, or
// that planned an array otherwise than p does.
func (c *copier) checkParts(p *Plan) ([]*Record, []string) {
	n := c.held.N
	var problems []string
	recs := make([]*Record, n)
	for k := range n {
		q := Part{k, n}
		r := c.held.Parts[k]
		recs[k] = r
		switch {
		case r == nil:
			problems = append(problems, fmt.Sprintf("part %s has not run: DEST holds no %s", q, partFile(q)))
			continue
		case r.Done == nil:
			problems = append(problems, fmt.Sprintf("part %s has not written its whole share: it started at %s and is running, or stopped; run it again with --resume", q, r.Started.Format(time.RFC3339)))
		}
		for _, pa := range p.Arrays {
			prev, ok := r.files(pa.Path)
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("part %s has no array %s: it ran with another SOURCE", q, pa.Path))
			case !sameFiles(prev, pa.Files):
				problems = append(problems, fmt.Sprintf("part %s wrote %s with other settings (%s)", q, pa.Path, filesDiff(prev, pa.Files)))
			}
		}
	}
	return recs, problems
}

// checkShares lists every array in DEST and compares the objects in each
// part's share with what the part recorded; it returns what differs.
func (c *copier) checkShares(ctx context.Context, p *Plan, recs []*Record) ([]string, error) {
	n := len(recs)
	shares := jobShares(p, n)
	var problems []string
	for i, pa := range p.Arrays {
		got := make([]ShareStats, n)
		err := c.dst.Walk(ctx, pa.Path, func(key string, size int64) error {
			under, rel := pathRel(key, pa.Path)
			j := objectIndex(pa, rel)
			if !under || j < 0 || isRecord(key) {
				return nil
			}
			k := sort.Search(n, func(k int) bool { return shares[i][k].hi > j }) // the shares are runs in order...
			if pa.Enc == nil {
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
			want := recs[k].Done.Arrays[pa.Path]
			if got[k].Objects != want.Objects || got[k].Bytes != want.Bytes {
				problems = append(problems, fmt.Sprintf("%s: part %s wrote %d objects (%d bytes) of its share, DEST holds %d of them (%d bytes); run the part again with --resume",
					pa.Path, Part{k, n}, want.Objects, want.Bytes, got[k].Objects, got[k].Bytes))
			}
		}
	}
	return problems, nil
}

// isRecord reports whether key is the record of a run or a part.
func isRecord(key string) bool {
	_, ok := parsePartFile(key)
	return ok || key == RunFile
}

// JobStats adds up the records of a split job's parts, recs (by K), by
// array of p: the counts of each array's chunks, BYTES IN the decoded
// size of the chunks DEST holds (kept chunks, which an earlier run of a
// part wrote, at their decoded size), BYTES OUT their stored size, and
// the time the parts' last runs spent on it, summed; and each part's bytes
// in, counted alike.
func JobStats(p *Plan, recs []*Record) (stats []Stats, partIn []int64) {
	stats, partIn = make([]Stats, len(p.Arrays)), make([]int64, len(recs))
	for i, pa := range p.Arrays {
		st := Stats{Mine: true}
		for k, r := range recs {
			s := r.Done.Arrays[pa.Path]
			in := s.In
			if pa.Enc != nil {
				in += s.Kept * pa.Enc.Array().ChunkLen()
			}
			partIn[k] += in
			st.Written += s.Written
			st.Empty += s.Empty
			st.Kept += s.Kept
			st.In += in
			st.Out += s.Bytes
			st.Took += time.Duration(s.Took * float64(time.Second))
		}
		stats[i] = st
	}
	return stats, partIn
}
