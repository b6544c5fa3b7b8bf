package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zfuse/zfuse/convert"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/zfuse/zfuse/zarr"
)

// The records zfuse compress keeps in DEST while a job is unfinished. A
// run of one process writes runFile first and removes it at the end. Each
// part of a split job (--part K/N) writes its own record, partFile: parts
// running at once never write the same file, and --finish reads them all,
// checks them, and removes them once the metadata is written.

// runFile records an unfinished run of one process in DEST.
const runFile = ".zfuse-compress.json"

// partFile is the name of the record of part p.
func partFile(p part) string { return fmt.Sprintf(".zfuse-compress-part-%d-of-%d.json", p.k, p.n) }

// parsePartFile returns the part whose record name is, or false.
func parsePartFile(name string) (part, bool) {
	var p part
	if _, err := fmt.Sscanf(name, ".zfuse-compress-part-%d-of-%d.json", &p.k, &p.n); err != nil || partFile(p) != name || p.n < 1 || p.k < 0 || p.k >= p.n {
		return part{}, false
	}
	return p, true
}

// A runRecord is a record: the flags that shape what is written, the
// metadata planned for each array, and, in a part's, what it did.
type runRecord struct {
	Version int                          `json:"zfuse_compress"`
	Part    string                       `json:"part,omitempty"` // "K/N"
	Flags   map[string]string            `json:"flags"`
	Arrays  map[string]map[string]string `json:"arrays"` // array path -> metadata file -> document
	Started time.Time                    `json:"started,omitzero"`
	Done    *partDone                    `json:"done,omitempty"` // a part that has written its whole share
}

// partDone is what a part did, recorded when its share is all written.
type partDone struct {
	Ended  time.Time             `json:"ended"`
	Took   float64               `json:"took_s"`
	Arrays map[string]shareStats `json:"arrays"` // by array path
}

// shareStats is what a part did for one array: the objects of its share
// that DEST holds (written now or kept) and their size, which --finish
// checks against DEST, and the counts of the summary.
type shareStats struct {
	Objects int64   `json:"objects"`
	Bytes   int64   `json:"bytes"`
	Written int64   `json:"written"`
	Empty   int64   `json:"empty"`
	Kept    int64   `json:"kept"`
	In      int64   `json:"in"`
	Out     int64   `json:"out"`
	Took    float64 `json:"took_s"`
}

// files returns the planned metadata of the array at p, as the plan holds it.
func (r *runRecord) files(p string) (map[string][]byte, bool) {
	fs, ok := r.Arrays[p]
	if !ok {
		return nil, false
	}
	out := map[string][]byte{}
	for name, s := range fs {
		out[name] = []byte(s)
	}
	return out, true
}

// newRecord is the record of a plan, before anything is written.
func newRecord(p *convert.Plan, settings map[string]string, prt part, started time.Time) *runRecord {
	r := &runRecord{Version: 1, Flags: settings, Arrays: map[string]map[string]string{}, Started: started}
	if prt.n > 0 {
		r.Part = prt.String()
	}
	for _, pa := range p.Arrays {
		r.Arrays[pa.Path] = map[string]string{}
		for name, b := range pa.Files {
			r.Arrays[pa.Path][name] = string(b)
		}
	}
	return r
}

// destState is what DEST holds at its top, read before anything is
// written: the records of an unfinished job, and whether it is a Zarr
// store already.
type destState struct {
	names []string           // what is at the top
	run   *runRecord         // runFile: a run of one process, unfinished
	parts map[int]*runRecord // the part records, by K
	n     int                // the N of the part records; 0: none
	store bool               // Zarr metadata at the top: a store written before
}

// readDest reads dst's state.
func readDest(ctx context.Context, dst destination) (*destState, error) {
	names, err := destNames(ctx, dst)
	if err != nil {
		return nil, err
	}
	st := &destState{names: names, parts: map[int]*runRecord{}}
	read := func(name string) (*runRecord, error) {
		b, err := dst.ReadKey(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("DEST: %w", err)
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("DEST: %s: %w", name, err)
		}
		return &r, nil
	}
	var ns []int
	for _, name := range names {
		switch name {
		case runFile:
			if st.run, err = read(name); err != nil {
				return nil, err
			}
			continue
		case zarr.GroupFile, zarr.ArrayFile, zarr.MetadataFile:
			st.store = true
		}
		p, ok := parsePartFile(name)
		if !ok {
			continue
		}
		if !slices.Contains(ns, p.n) {
			ns = append(ns, p.n)
		}
		if st.parts[p.k], err = read(name); err != nil {
			return nil, err
		}
	}
	switch len(ns) {
	case 0:
	case 1:
		st.n = ns[0]
	default:
		return nil, fmt.Errorf("DEST holds the parts of jobs split %v ways: refused (one job per DEST)", ns)
	}
	return st, nil
}

// partRecords returns the part records of st in the order of K.
func (st *destState) partRecords() iter.Seq2[part, *runRecord] {
	return func(yield func(part, *runRecord) bool) {
		for _, k := range slices.Sorted(maps.Keys(st.parts)) {
			if !yield(part{k, st.n}, st.parts[k]) {
				return
			}
		}
	}
}

// errFinished means --finish found the job finished already.
var errFinished = errors.New("finished already")

// checkHolds refuses a DEST whose contents this run would lose or mix
// with what it writes, before anything is written: not empty without
// --resume (a part may join the parts of its own job), another kind of job
// than this run's, or, for --resume, neither a record nor a store.
func checkHolds(dest string, st *destState, prt part, finish, resume bool) error {
	split := fmt.Sprintf("a job split in %d parts (.zfuse-compress-part-*-of-%d.json)", st.n, st.n)
	switch {
	case finish && st.run != nil:
		return fmt.Errorf("DEST %s holds an unfinished run of one process (%s), not the parts of a split job: resume it with --resume, without --finish", dest, runFile)
	case finish && st.n == 0 && st.store:
		return errFinished
	case finish && st.n == 0:
		return fmt.Errorf("DEST %s holds no part of a split job: run its parts (--part K/N) first", dest)
	case finish:
		return nil
	case prt.n == 0 && st.n > 0:
		return fmt.Errorf("DEST %s holds %s: continue its parts with --part K/%d --resume, or finish it with --finish", dest, split, st.n)
	case prt.n > 0 && st.run != nil:
		return fmt.Errorf("DEST %s holds an unfinished run of one process (%s): resume it with --resume, without --part", dest, runFile)
	case prt.n > 0 && st.n > 0 && st.n != prt.n:
		return fmt.Errorf("DEST %s holds %s, and this is part %s: refused (give every part of a job the same N)", dest, split, prt)
	case prt.n > 0 && st.parts[prt.k] != nil && !resume:
		return fmt.Errorf("DEST %s holds part %s already (%s): refused (to continue it, add --resume)", dest, prt, partFile(prt))
	case prt.n > 0 && st.n > 0:
		return nil // the other parts of this job are writing, or wrote, their shares
	case len(st.names) == 0:
		return nil
	case !resume:
		return fmt.Errorf("DEST %s is not empty: refused (to continue an interrupted zfuse compress into it, add --resume)", dest)
	case st.run == nil && !st.store:
		return fmt.Errorf("DEST %s is not empty and holds neither an interrupted zfuse compress run (%s) nor a Zarr store: refused", dest, runFile)
	}
	return nil
}
