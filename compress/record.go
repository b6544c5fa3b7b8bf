package compress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/zfuse/zfuse/zarr"
)

// The records zfuse compress keeps in DEST while a job is unfinished. A
// run of one process writes RunFile first and removes it at the end. Each
// part of a split job (--part K/N) writes its own record, partFile: parts
// running at once never write the same file, and --finish reads them all,
// checks them, and removes them once the metadata is written.

// RunFile records an unfinished run of one process in DEST.
const RunFile = ".zfuse-compress.json"

// partFile is the name of the record of part p.
func partFile(p Part) string { return fmt.Sprintf(".zfuse-compress-part-%d-of-%d.json", p.K, p.N) }

// parsePartFile returns the part whose record name is, or false.
func parsePartFile(name string) (Part, bool) {
	var p Part
	if _, err := fmt.Sscanf(name, ".zfuse-compress-part-%d-of-%d.json", &p.K, &p.N); err != nil || partFile(p) != name || p.N < 1 || p.K < 0 || p.K >= p.N {
		return Part{}, false
	}
	return p, true
}

// A Record is a record: the flags that shape what is written, the
// metadata planned for each array, and, in a part's, what it did.
type Record struct {
	Version int                          `json:"zfuse_compress"`
	Part    string                       `json:"part,omitempty"` // "K/N"
	Flags   map[string]string            `json:"flags"`
	Arrays  map[string]map[string]string `json:"arrays"` // array path -> metadata file -> document
	Started time.Time                    `json:"started,omitzero"`
	Done    *PartDone                    `json:"done,omitempty"` // a part that has written its whole share
}

// PartDone is what a part did, recorded when its share is all written.
type PartDone struct {
	Ended  time.Time             `json:"ended"`
	Took   float64               `json:"took_s"`
	Arrays map[string]ShareStats `json:"arrays"` // by array path
}

// ShareStats is what a part did for one array: the objects of its share
// that DEST holds (written now or kept) and their size, which --finish
// checks against DEST, and the counts of the summary.
type ShareStats struct {
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
func (r *Record) files(p string) (map[string][]byte, bool) {
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
func newRecord(p *Plan, settings map[string]string, prt Part, started time.Time) *Record {
	r := &Record{Version: 1, Flags: settings, Arrays: map[string]map[string]string{}, Started: started}
	if prt.N > 0 {
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

// DestState is what DEST holds at its top, read before anything is
// written: the records of an unfinished job, and whether it is a Zarr
// store already.
type DestState struct {
	Names []string        // what is at the top
	Run   *Record         // RunFile: a run of one process, unfinished
	Parts map[int]*Record // the part records, by K
	N     int             // the N of the part records; 0: none
	Store bool            // Zarr metadata at the top: a store written before
}

// ReadDest reads dst's state.
func ReadDest(ctx context.Context, dst Destination) (*DestState, error) {
	names, err := destNames(ctx, dst)
	if err != nil {
		return nil, err
	}
	st := &DestState{Names: names, Parts: map[int]*Record{}}
	read := func(name string) (*Record, error) {
		b, err := dst.ReadKey(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("DEST: %w", err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("DEST: %s: %w", name, err)
		}
		return &r, nil
	}
	var ns []int
	for _, name := range names {
		switch name {
		case RunFile:
			if st.Run, err = read(name); err != nil {
				return nil, err
			}
			continue
		case zarr.GroupFile, zarr.ArrayFile, zarr.MetadataFile:
			st.Store = true
		}
		p, ok := parsePartFile(name)
		if !ok {
			continue
		}
		if !slices.Contains(ns, p.N) {
			ns = append(ns, p.N)
		}
		if st.Parts[p.K], err = read(name); err != nil {
			return nil, err
		}
	}
	switch len(ns) {
	case 0:
	case 1:
		st.N = ns[0]
	default:
		return nil, fmt.Errorf("DEST holds the parts of jobs split %v ways: refused (one job per DEST)", ns)
	}
	return st, nil
}

// A Recorded is the settings a record of DEST holds, and who recorded
// them, for messages ("DEST d: part 1/4 of this job was").
type Recorded struct {
	What  string
	Flags map[string]string
}

// Recorded returns the records of DEST (named dest) whose settings a run
// of part prt (N 0: one process) must agree with: with take (--resume,
// --finish), an unfinished run's record, or every part's (a part's own
// first); without take, the other parts' records only, and nothing for
// one process.
func (st *DestState) Recorded(dest string, prt Part, take bool) []Recorded {
	var recs []Recorded
	switch {
	case prt.N == 0 && !take:
	case prt.N == 0 && st.Run != nil:
		recs = append(recs, Recorded{"--resume: DEST " + dest + " was", st.Run.Flags})
	default:
		if r := st.Parts[prt.K]; r != nil && prt.N > 0 {
			recs = append(recs, Recorded{"DEST " + dest + ": part " + prt.String() + " was", r.Flags})
		}
		for p, r := range st.PartRecords() {
			if p.K != prt.K || prt.N == 0 {
				recs = append(recs, Recorded{"DEST " + dest + ": part " + p.String() + " of this job was", r.Flags})
			}
		}
	}
	return recs
}

// PartRecords returns the part records of st in the order of K.
func (st *DestState) PartRecords() iter.Seq2[Part, *Record] {
	return func(yield func(Part, *Record) bool) {
		for _, k := range slices.Sorted(maps.Keys(st.Parts)) {
			if !yield(Part{k, st.N}, st.Parts[k]) {
				return
			}
		}
	}
}

// ErrFinished means --finish found the job finished already.
var ErrFinished = errors.New("finished already")

// CheckHolds refuses a DEST whose contents this run would lose or mix
// with what it writes, before anything is written: not empty without
// --resume (a part may join the parts of its own job), another kind of job
// than this run's, or, for --resume, neither a record nor a store.
func CheckHolds(dest string, st *DestState, prt Part, finish, resume bool) error {
	split := fmt.Sprintf("a job split in %d parts (.zfuse-compress-part-*-of-%d.json)", st.N, st.N)
	switch {
	case finish && st.Run != nil:
		return fmt.Errorf("DEST %s holds an unfinished run of one process (%s), not the parts of a split job: resume it with --resume, without --finish", dest, RunFile)
	case finish && st.N == 0 && st.Store:
		return ErrFinished
	case finish && st.N == 0:
		return fmt.Errorf("DEST %s holds no part of a split job: run its parts (--part K/N) first", dest)
	case finish:
		return nil
	case prt.N == 0 && st.N > 0:
		return fmt.Errorf("DEST %s holds %s: continue its parts with --part K/%d --resume, or finish it with --finish", dest, split, st.N)
	case prt.N > 0 && st.Run != nil:
		return fmt.Errorf("DEST %s holds an unfinished run of one process (%s): resume it with --resume, without --part", dest, RunFile)
	case prt.N > 0 && st.N > 0 && st.N != prt.N:
		return fmt.Errorf("DEST %s holds %s, and this is part %s: refused (give every part of a job the same N)", dest, split, prt)
	case prt.N > 0 && st.Parts[prt.K] != nil && !resume:
		return fmt.Errorf("DEST %s holds part %s already (%s): refused (to continue it, add --resume)", dest, prt, partFile(prt))
	case prt.N > 0 && st.N > 0:
		return nil // the other parts of this job are writing, or wrote, their shares
	case len(st.Names) == 0:
		return nil
	case !resume:
		return fmt.Errorf("DEST %s is not empty: refused (to continue an interrupted zfuse compress into it, add --resume)", dest)
	case st.Run == nil && !st.Store:
		return fmt.Errorf("DEST %s is not empty and holds neither an interrupted zfuse compress run (%s) nor a Zarr store: refused", dest, RunFile)
	}
	return nil
}
