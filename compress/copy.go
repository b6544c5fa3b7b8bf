package compress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/readahead"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// How zfuse compress copies: array by array, each in units (a run of new
// chunks in C order, or one shard), with up to two units per worker in
// flight and their chunk bytes bounded by --memory. A unit reads its
// source chunks decoded (the chunk loader decodes on the CPU pool or the
// GPU), encodes its chunks as one batch (the encode pool), and writes
// them into the Destination, which shows each value whole or not at all:
// a killed run leaves whole values only. An array's metadata is written
// when all its chunks are, the groups' and the consolidated metadata
// last, so DEST never describes data it lacks. The run's record, written
// first, holds the plan, so that --resume keeps exactly the chunks written
// with the same settings: those DEST lists, at a size they can have.
//
// A part (--part K/N) writes only its share of each array's objects
// (split.go) and no metadata; its record, at the end, says what
// it wrote, for --finish.

// Chunks are SOURCE's chunks, decoded (readahead.Loader.ChunkInto): the
// slice is the caller's own copy, in buf where it has the capacity, which
// it may modify; a missing chunk satisfies errors.Is(err, fs.ErrNotExist).
type Chunks interface {
	ChunkInto(ctx context.Context, r readahead.Ref, buf []byte) ([]byte, error)
}

// A Config says where a plan is copied and how.
type Config struct {
	Log      *slog.Logger                           // nil: discard
	Src      store.Store                            // the source store, for arrays copied as stored
	Chunks   Chunks                                 // the source's decoded chunks
	Encoders func(codec.Encoder) codec.BatchEncoder // what encodes a batch of chunks with an encoder
	Dst      Destination
	Dest     string     // DEST as given, for messages
	Held     *DestState // what DEST held at the start (ReadDest)

	Workers    int   // units in flight: two per worker
	Memory     int64 // bound on the chunk bytes in flight
	WriteEmpty bool  // write chunks whose every element is the fill value
	Resume     bool  // keep what an interrupted run with the same plan wrote
	Verify     bool  // read every chunk back from DEST and compare it with the source

	Settings map[string]string // the settings recorded for --resume and --finish (flag name -> value)
	Part     Part              // the share of the job to write; N 0: the whole job

	// Progress, when not nil, is called as units finish with the new
	// chunks done (written, left out or kept) and their bytes in
	// (decoded) and out (stored). It must be safe for concurrent use.
	Progress func(chunks, in, out int64)
}

// Stats are what the copy of one array of the plan did.
type Stats struct {
	Mine                 bool  // this process wrote (a share of) the array; false: another part's
	Written, Empty, Kept int64 // new chunks written, left out (fill or missing), kept from a previous run
	In, Out              int64 // decoded bytes of the chunks written, their stored bytes
	Objects, Bytes       int64 // objects (chunks, shards, values copied) of the share DEST holds, their size
	Verified             int64 // chunks read back from DEST (or found absent, as left out) and equal to the source
	Took                 time.Duration
}

// Run writes the plan into cfg.Dst, or cfg.Part's share of it (no
// metadata then, and a record for Finish), and returns what it did for
// each array of the plan, in order.
func Run(ctx context.Context, p *Plan, cfg Config) ([]Stats, error) {
	c := newCopier(p, cfg)
	if err := c.run(ctx, p); err != nil {
		return nil, err
	}
	return c.results(), nil
}

// Total is the work of part prt's shares of the plan (N 0: the whole
// plan), in new chunks and their decoded bytes; chunks of arrays copied
// as stored are not counted.
func Total(p *Plan, prt Part) (chunks, bytes int64) {
	c := newCopier(p, Config{Part: prt})
	return c.total(p)
}

// A copier runs a Plan into DEST.
type copier struct {
	log        *slog.Logger
	src        store.Store
	chunks     Chunks
	encoders   func(codec.Encoder) codec.BatchEncoder
	dst        Destination
	dest       string     // DEST as given, for messages
	held       *DestState // what DEST held at the start
	workers    int
	memory     int64
	writeEmpty bool
	resume     bool
	verify     bool
	settings   map[string]string // recorded for --resume
	part       Part              // --part; N 0: the whole job
	progress   func(chunks, in, out int64)

	record  string        // the key of this run's record: RunFile or the part's
	shares  []share       // by plan.Arrays index: the objects this process writes (divide)
	started time.Time     // when this run started (set by run)
	began   time.Time     // when this part first started, in this run or one it resumes
	stats   []*arrayStats // by plan.Arrays index, filled by run
}

func newCopier(p *Plan, cfg Config) *copier {
	c := &copier{
		log: cfg.Log, src: cfg.Src, chunks: cfg.Chunks, encoders: cfg.Encoders, dst: cfg.Dst, dest: cfg.Dest, held: cfg.Held,
		workers: max(cfg.Workers, 1), memory: cfg.Memory, writeEmpty: cfg.WriteEmpty, resume: cfg.Resume, verify: cfg.Verify,
		settings: cfg.Settings, part: cfg.Part, progress: cfg.Progress,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.progress == nil {
		c.progress = func(chunks, in, out int64) {}
	}
	c.divide(p)
	return c
}

// arrayStats count what one array's copy did. Updated atomically.
type arrayStats struct {
	written, empty, kept atomic.Int64 // new chunks written, left out (fill or missing), kept from a previous run
	in, out              atomic.Int64 // decoded bytes of the chunks written, their stored bytes
	objects, bytes       atomic.Int64 // objects (chunks, shards, values copied) of the share DEST holds, their size
	verified             atomic.Int64 // chunks read back from DEST (or found absent, as left out) and equal to the source
	took                 time.Duration
}

// results are the stats of a finished run.
func (c *copier) results() []Stats {
	out := make([]Stats, len(c.stats))
	for i, s := range c.stats {
		out[i] = Stats{
			Mine:    c.part.N == 0 || c.shares[i].lo < c.shares[i].hi,
			Written: s.written.Load(), Empty: s.empty.Load(), Kept: s.kept.Load(),
			In: s.in.Load(), Out: s.out.Load(), Objects: s.objects.Load(), Bytes: s.bytes.Load(),
			Verified: s.verified.Load(), Took: s.took,
		}
	}
	return out
}

// divide decides what this process writes: with --part K/N its share of
// the job, else everything. It sets the record's name.
func (c *copier) divide(p *Plan) {
	c.record = RunFile
	if c.part.N > 0 {
		c.record = partFile(c.part)
	}
	all := jobShares(p, max(c.part.N, 1))
	c.shares = make([]share, len(p.Arrays))
	for i := range p.Arrays {
		c.shares[i] = all[i][c.part.K]
	}
}

// jobShares returns the shares of each of n parts of the plan: [array
// index][part]. An array copied as stored has one object, the whole array,
// in its owner's share.
func jobShares(p *Plan, n int) [][]share {
	encs := make([]*zarr.Array, len(p.Arrays))
	for i, pa := range p.Arrays {
		if pa.Enc != nil {
			encs[i] = pa.Enc.Array()
		}
	}
	out := split(encs, n)
	stored := 0
	for i, pa := range p.Arrays {
		if pa.Enc == nil {
			out[i][owner(stored, n)] = share{0, 1}
			stored++
		}
	}
	return out
}

// total is the work of this process's shares, in new chunks and their
// decoded bytes (chunks of arrays copied as stored are not counted).
func (c *copier) total(p *Plan) (chunks, bytes int64) {
	for i, pa := range p.Arrays {
		if pa.Enc == nil || c.shares[i].hi == c.shares[i].lo {
			continue
		}
		d := pa.Enc.Array()
		_, before := weight(d, c.shares[i].lo)
		w, last := weight(d, c.shares[i].hi-1)
		bytes += last + w - before
		chunks += (last + w - before) / max(d.ChunkLen(), 1)
	}
	return chunks, bytes
}

// mine reports whether key is this process's to write: everything in a
// run of one process; for a part, its record and the objects of its
// shares.
func (c *copier) mine(p *Plan) func(key string) bool {
	return func(key string) bool {
		switch {
		case c.part.N == 0:
			return true
		case isRecord(key):
			return key == c.record
		}
		i, rel := arrayOf(p, key)
		return i >= 0 && c.shares[i].has(objectIndex(p.Arrays[i], rel))
	}
}

// arrayOf returns the index in p.Arrays of the array whose directory holds
// key, and key relative to it; -1 when none does.
func arrayOf(p *Plan, key string) (int, string) {
	best, rel := -1, ""
	for i, pa := range p.Arrays {
		r, ok := key, pa.Path == "."
		if !ok {
			r, ok = strings.CutPrefix(key, pa.Path+"/")
		}
		if ok && (best < 0 || len(pa.Path) > len(p.Arrays[best].Path)) {
			best, rel = i, r
		}
	}
	return best, rel
}

// objectIndex returns the index, in C order over the stored grid, of the
// object at rel (a key relative to the array pa) that the plan writes, or
// -1 when no object of the plan's is stored there. An array copied as
// stored is one object, 0, for any key but its metadata.
func objectIndex(pa *Array, rel string) int64 {
	if pa.Enc == nil {
		if _, meta := pa.Files[rel]; meta {
			return -1
		}
		return 0
	}
	d := pa.Enc.Array()
	coords, ok := d.ParseStoredKey(rel)
	if !ok {
		return -1
	}
	var j int64
	for ax, g := range d.StoredGrid() {
		j = j*int64(g) + int64(coords[ax])
	}
	return j
}

// plausible reports whether a stored object of size n that DEST holds can
// be one that the plan writes for pa: not empty, at least a shard index,
// exactly the chunk size for codecs that keep it. Writes are whole, so a
// listing's size is the check short of reading the object (--verify).
func plausible(pa *Array, n int64) bool {
	d := pa.Enc.Array()
	if sh := d.Shard(); sh != nil {
		return n > sh.IndexLen()
	}
	if max := int64(pa.Enc.Chunk().MaxEncodedLen(int(d.ChunkLen()))); max == d.ChunkLen() {
		return n == max
	}
	return n > 0
}

// run writes the plan, or this part's share of it.
func (c *copier) run(ctx context.Context, p *Plan) error {
	previous, err := c.previousRun(ctx, p)
	if err != nil {
		return err
	}
	for _, pa := range p.Arrays {
		if prev, ok := previous[pa.Path]; ok && !sameFiles(prev, pa.Files) {
			return fmt.Errorf("--resume: DEST %s holds %s written with other settings (%s): refused before writing anything; give the flags it was written with, or a new DEST",
				c.dest, pa.Path, filesDiff(prev, pa.Files))
		}
		for q, r := range c.held.PartRecords() {
			if prev, ok := r.files(pa.Path); ok && q != c.part && !sameFiles(prev, pa.Files) {
				return fmt.Errorf("DEST %s: part %s of this job writes %s with other settings (%s): refused before writing anything; every part of a job needs the same flags",
					c.dest, q, pa.Path, filesDiff(prev, pa.Files))
			}
		}
	}
	c.started, c.began = time.Now(), time.Now()
	if r := c.held.Parts[c.part.K]; c.resume && c.part.N > 0 && r != nil && !r.Started.IsZero() {
		c.began = r.Started // the job's time counts from the part's first start
	}
	if err := c.writeRecord(ctx, p, nil); err != nil {
		return err
	}
	// What a killed run of this process left half-written, no reader saw.
	if err := c.dst.Clean(ctx, c.mine(p)); err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	c.stats = make([]*arrayStats, len(p.Arrays))
	for i, pa := range p.Arrays {
		c.stats[i] = &arrayStats{}
		start := time.Now()
		keep := c.resume && sameFiles(previous[pa.Path], pa.Files)
		switch {
		case c.shares[i].lo == c.shares[i].hi: // another part's
		case pa.Enc == nil:
			err = c.copyStored(ctx, pa, c.stats[i])
		default:
			err = c.copyArray(ctx, pa, c.shares[i], keep, c.stats[i])
		}
		if err != nil {
			return err
		}
		if c.part.N == 0 {
			if err := c.writeFiles(ctx, pa.Path, pa.Files); err != nil {
				return err
			}
		}
		c.stats[i].took = time.Since(start)
	}
	if c.part.N > 0 {
		return c.writeRecord(ctx, p, c.done(p))
	}
	if err := c.writeGroups(ctx, p); err != nil {
		return err
	}
	return c.dst.RemoveKey(ctx, RunFile)
}

// done is what this part did, for its record.
func (c *copier) done(p *Plan) *PartDone {
	d := &PartDone{Ended: time.Now(), Took: time.Since(c.started).Seconds(), Arrays: map[string]ShareStats{}}
	for i, pa := range p.Arrays {
		if c.shares[i].lo == c.shares[i].hi {
			continue
		}
		s := c.stats[i]
		d.Arrays[pa.Path] = ShareStats{
			Objects: s.objects.Load(), Bytes: s.bytes.Load(),
			Written: s.written.Load(), Empty: s.empty.Load(), Kept: s.kept.Load(), In: s.in.Load(), Out: s.out.Load(),
			Took: s.took.Seconds(),
		}
	}
	return d
}

// previousRun returns what an earlier run of this process into DEST
// planned for each array (from its record), or, for arrays whose metadata
// was written, that metadata; with --resume, an array whose plan is the
// same keeps its chunks.
func (c *copier) previousRun(ctx context.Context, p *Plan) (map[string]map[string][]byte, error) {
	prev := map[string]map[string][]byte{}
	if !c.resume {
		return prev, nil
	}
	r := c.held.Run
	if c.part.N > 0 {
		r = c.held.Parts[c.part.K]
	}
	if r != nil {
		for _, pa := range p.Arrays {
			if files, ok := r.files(pa.Path); ok {
				prev[pa.Path] = files
			}
		}
	}
	if c.held.N > 0 || len(c.held.Names) == 0 {
		return prev, nil // a job in parts, or nothing: no metadata to read
	}
	for _, pa := range p.Arrays {
		if _, ok := prev[pa.Path]; ok {
			continue
		}
		// Whatever metadata DEST holds for it, in either format: a store of
		// another format is other settings too.
		files := map[string][]byte{}
		for _, name := range []string{zarr.ArrayFile, zarr.AttrsFile, zarr.MetadataFile} {
			b, err := c.dst.ReadKey(ctx, path.Join(pa.Path, name))
			switch {
			case err == nil:
				files[name] = b
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("DEST: %w", err)
			}
		}
		if len(files) > 0 {
			prev[pa.Path] = files
		}
	}
	return prev, nil
}

// writeRecord writes this run's record: the plan, and for a part that has
// written its share, done.
func (c *copier) writeRecord(ctx context.Context, p *Plan, done *PartDone) error {
	r := newRecord(p, c.settings, c.part, c.began)
	r.Done = done
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := c.dst.WriteKey(ctx, c.record, b); err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	return nil
}

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for name, x := range a {
		if !bytes.Equal(x, b[name]) {
			return false
		}
	}
	return true
}

// filesDiff names what differs between the metadata documents a and b
// (DEST's and this run's): the file, and in JSON documents the fields.
func filesDiff(a, b map[string][]byte) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[name]; !ok {
			out = append(out, name+": in DEST, not written by this run")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		x, ok := a[name]
		switch {
		case !ok:
			out = append(out, name+": not in DEST")
			continue
		case bytes.Equal(x, b[name]):
			continue
		}
		var mx, my map[string]any
		if json.Unmarshal(x, &mx) != nil || json.Unmarshal(b[name], &my) != nil {
			out = append(out, name+" differs")
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(my)) {
			if vx, vy := jsonText(mx[k]), jsonText(my[k]); vx != vy {
				out = append(out, fmt.Sprintf("%s %s: %s in DEST, %s in this run", name, k, vx, vy))
			}
		}
	}
	return strings.Join(out, "; ")
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (c *copier) writeFiles(ctx context.Context, p string, files map[string][]byte) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := c.dst.WriteKey(ctx, path.Join(p, name), files[name]); err != nil {
			return fmt.Errorf("DEST: %w", err)
		}
	}
	return nil
}

// writeGroups writes every group's metadata, and last the root's
// consolidated metadata over everything written.
func (c *copier) writeGroups(ctx context.Context, p *Plan) error {
	docs := map[string]map[string][]byte{}
	for _, pa := range p.Arrays {
		docs[pa.SrcDir] = pa.Files
	}
	var root map[string][]byte
	for _, g := range p.Groups {
		if g.Path == "." {
			root = g.Files
			docs[""] = g.Files
			continue
		}
		docs[g.Path] = g.Files
		if err := c.writeFiles(ctx, g.Path, g.Files); err != nil {
			return err
		}
	}
	if root == nil {
		return nil
	}
	if p.Consolidated != 0 {
		cf, err := zarr.Consolidate(p.Consolidated, docs)
		if err != nil {
			return err
		}
		if p.Consolidated == 2 {
			if err := c.writeFiles(ctx, ".", root); err != nil {
				return err
			}
		}
		return c.writeFiles(ctx, ".", cf)
	}
	return c.writeFiles(ctx, ".", root)
}

// copyStored copies every value under an array that cannot be encoded as
// it is stored: the keys of its chunk grid (remote stores may not list
// chunk keys), then whatever else the store lists under it; its metadata
// is written with the others', after its values.
func (c *copier) copyStored(ctx context.Context, pa *Array, st *arrayStats) error {
	done := map[string]bool{}
	copyKey := func(key string) error {
		rel := strings.TrimPrefix(strings.TrimPrefix(key, pa.SrcDir), "/")
		if _, meta := pa.Files[rel]; done[key] || meta {
			return nil
		}
		done[key] = true
		b, err := c.src.ReadKey(ctx, key)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := c.dst.WriteKey(ctx, path.Join(pa.Path, rel), b); err != nil {
			return fmt.Errorf("DEST: %w", err)
		}
		st.objects.Add(1)
		st.bytes.Add(int64(len(b)))
		return nil
	}
	if a := pa.Src; a != nil {
		for i := range a.NumChunks() {
			key, _, _ := a.StoredKey(a.Coords(i))
			if err := copyKey(path.Join(pa.SrcDir, key)); err != nil {
				return err
			}
		}
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		es, err := c.src.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range es {
			k := path.Join(dir, e.Name)
			if e.Dir {
				err = walk(k)
			} else {
				err = copyKey(k)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	err := walk(pa.Path)
	if errors.Is(err, store.ErrNotSupported) {
		if pa.Src == nil {
			c.log.Warn("array copied without its chunks: the store cannot list them and its metadata does not parse", "key", pa.Path)
		}
		return nil
	}
	return err
}

// A unit is a piece of one array's copy: the new chunks it writes, in
// order, and for a sharded array the shard they form.
type unit struct {
	coords [][]int // presented coordinates of the new chunks; nil entries lie outside the array (edge shards)
	shard  []int   // the shard's coordinates; nil when not sharded
}

// units returns the units of the objects sh of the array: runs of up to
// 16 chunks (and 16 MiB) unsharded, one shard each sharded.
func units(d *zarr.Array, sh share) (n int64, at func(i int64) unit) {
	if s := d.Shard(); s != nil {
		grid := d.StoredGrid()
		return sh.hi - sh.lo, func(i int64) unit {
			g := zarr.Unravel(sh.lo+i, grid)
			u := unit{shard: g, coords: make([][]int, s.InnerChunks())}
			for k := range u.coords {
				if c, ok := d.InnerCoords(g, k); ok {
					u.coords[k] = c
				}
			}
			return u
		}
	}
	per := int64(max(min(16, (16<<20)/max(d.ChunkLen(), 1)), 1))
	return (sh.hi - sh.lo + per - 1) / per, func(i int64) unit {
		var u unit
		for j := sh.lo + i*per; j < min(sh.lo+(i+1)*per, sh.hi); j++ {
			u.coords = append(u.coords, d.Coords(j))
		}
		return u
	}
}

// copyArray writes the chunks of the objects sh of an array that is
// encoded. With keep, the objects of sh that DEST holds at a plausible
// size are kept; without, they are removed first (an earlier run's, with
// other settings).
func (c *copier) copyArray(ctx context.Context, pa *Array, sh share, keep bool, st *arrayStats) error {
	d := pa.Enc.Array()
	n, at := units(d, sh)
	if n == 0 || d.NumChunks() == 0 {
		return nil // an empty array: metadata only
	}
	held := map[string]int64{} // key -> size of the objects of sh that DEST holds
	err := c.dst.Walk(ctx, pa.Path, func(key string, size int64) error {
		if i, rel := pathRel(key, pa.Path); i && sh.has(objectIndex(pa, rel)) {
			held[key] = size
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	for key, size := range held {
		if !keep || !plausible(pa, size) {
			if err := c.dst.RemoveKey(ctx, key); err != nil {
				return fmt.Errorf("DEST: %w", err)
			}
			delete(held, key)
		}
	}
	first := at(0)
	weight := int64(len(first.coords)) * (d.ChunkLen() + int64(pa.Enc.Chunk().MaxEncodedLen(int(d.ChunkLen()))))
	sem := semaphore.NewWeighted(max(c.memory, weight))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * c.workers)
	enc := c.encoders(pa.Enc.Chunk())
	for i := range n {
		if err := sem.Acquire(gctx, weight); err != nil {
			break // the group's error (or ctx's) is returned below
		}
		g.Go(func() error {
			defer sem.Release(weight)
			return c.unit(gctx, pa, enc, at(i), held, st)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// pathRel returns key relative to the directory dir of a store ("." for
// the root), and whether key is under dir.
func pathRel(key, dir string) (bool, string) {
	if dir == "." {
		return true, key
	}
	rel, ok := strings.CutPrefix(key, dir+"/")
	return ok, rel
}

// pid names compress's reads to the chunk loader.
var pid = uint32(os.Getpid())

// unit copies one unit: it reads the source chunks of the new chunks
// that DEST does not hold yet (with --verify, of all), encodes them as
// one batch and writes them, then, with --verify, reads them back.
func (c *copier) unit(ctx context.Context, pa *Array, enc codec.BatchEncoder, u unit, held map[string]int64, st *arrayStats) error {
	key := unitKeys(pa, u)
	// Chunks already written by a run with the same settings are kept
	// (and with --verify checked against the source). held is only read.
	kept := make([]bool, len(u.coords))
	inside := 0
	for i, co := range u.coords {
		if co != nil {
			_, kept[i] = held[key(i)]
			inside++
		}
	}
	raws := make([][]byte, len(u.coords))
	defer func() {
		for _, b := range raws {
			if b != nil {
				codec.PutBuf(&b)
			}
		}
	}()
	for i, co := range u.coords {
		if co == nil || (kept[i] && !c.verify) {
			continue
		}
		raw, err := c.raw(ctx, pa, co)
		if err != nil {
			return err
		}
		raws[i] = raw
	}
	if allKept(kept, u.coords) {
		c.countKept(u, key, held, inside, st)
	} else if err := c.encodeUnit(ctx, pa, enc, u, key, kept, raws, held, inside, st); err != nil {
		return err
	}
	if c.verify {
		return c.verifyUnit(ctx, pa, u, raws, key, st)
	}
	return nil
}

// unitKeys returns the DEST key of each new chunk of u: its own, or its
// shard's.
func unitKeys(pa *Array, u unit) func(i int) string {
	d := pa.Enc.Array()
	if u.shard != nil {
		rel, _, _ := d.StoredKey(firstCoords(u))
		shardKey := path.Join(pa.Path, rel)
		return func(int) string { return shardKey }
	}
	return func(i int) string { return path.Join(pa.Path, d.ChunkKey(u.coords[i])) }
}

// countKept counts a unit whose every chunk DEST holds already.
func (c *copier) countKept(u unit, key func(int) string, held map[string]int64, inside int, st *arrayStats) {
	st.kept.Add(int64(inside))
	if u.shard != nil {
		st.objects.Add(1)
		st.bytes.Add(held[key(0)])
	} else {
		for i := range u.coords {
			st.objects.Add(1)
			st.bytes.Add(held[key(i)])
		}
	}
	c.progress(int64(inside), 0, 0)
}

// encodeUnit encodes the chunks of u that are not kept (raws; nil: left
// out) as one batch, in buffers from codec's pool, and writes them.
func (c *copier) encodeUnit(ctx context.Context, pa *Array, enc codec.BatchEncoder, u unit, key func(int) string, kept []bool, raws [][]byte, held map[string]int64, inside int, st *arrayStats) error {
	d := pa.Enc.Array()
	var jobs []codec.Job
	var idx []int
	var bufs []*[]byte
	defer func() {
		for _, b := range bufs {
			codec.PutBuf(b)
		}
	}()
	nkept := 0
	for i, raw := range raws {
		if kept[i] && u.shard == nil {
			nkept++ // its file stays
			st.objects.Add(1)
			st.bytes.Add(held[key(i)])
			continue
		}
		if raw != nil {
			b := codec.GetBuf(pa.Enc.Chunk().MaxEncodedLen(len(raw)))
			bufs = append(bufs, b)
			jobs = append(jobs, codec.Job{Src: raw, Dst: (*b)[:0]})
			idx = append(idx, i)
		}
	}
	if len(jobs) > 0 {
		if err := enc.EncodeBatch(ctx, jobs); err != nil {
			return err
		}
	}
	encoded := make([][]byte, len(u.coords))
	for j, job := range jobs {
		if job.Err != nil {
			return fmt.Errorf("encode %s: %w", path.Join(pa.Path, d.ChunkKey(u.coords[idx[j]])), job.Err)
		}
		encoded[idx[j]] = job.Dst
	}
	out, err := c.writeUnit(ctx, pa, u, key, encoded, len(jobs), st)
	if err != nil {
		return err
	}
	in := int64(len(jobs)) * d.ChunkLen()
	st.written.Add(int64(len(jobs)))
	st.kept.Add(int64(nkept))
	st.empty.Add(int64(inside - len(jobs) - nkept))
	st.in.Add(in)
	st.out.Add(out)
	c.progress(int64(inside), in, out)
	return nil
}

// writeUnit writes the n encoded chunks of u (encoded, by unit index;
// nil: none to write), as its shard or each as its own object, and
// returns the bytes written.
func (c *copier) writeUnit(ctx context.Context, pa *Array, u unit, key func(int) string, encoded [][]byte, n int, st *arrayStats) (int64, error) {
	if u.shard != nil {
		if n == 0 {
			return 0, nil
		}
		b, err := pa.Enc.Shard(encoded)
		if err != nil {
			return 0, fmt.Errorf("shard %s: %w", key(0), err)
		}
		return int64(len(b)), c.write(ctx, key(0), b, st)
	}
	// Each chunk is its own object: written at once (the destination
	// bounds its requests in flight), for object stores' latency.
	var out int64
	wg, wctx := errgroup.WithContext(ctx)
	for i, b := range encoded {
		if b != nil {
			out += int64(len(b))
			wg.Go(func() error { return c.write(wctx, key(i), b, st) })
		}
	}
	return out, wg.Wait()
}

// write writes one object of the share.
func (c *copier) write(ctx context.Context, key string, b []byte, st *arrayStats) error {
	if err := c.dst.WriteKey(ctx, key, b); err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	c.log.Debug("wrote", "key", key, "n", len(b))
	st.objects.Add(1)
	st.bytes.Add(int64(len(b)))
	return nil
}

func firstCoords(u unit) []int {
	for _, c := range u.coords {
		if c != nil {
			return c
		}
	}
	return nil
}

// allKept reports whether every chunk inside the array was kept.
func allKept(kept []bool, coords [][]int) bool {
	any := false
	for i, k := range kept {
		if coords[i] != nil {
			if !k {
				return false
			}
			any = true
		}
	}
	return any
}

// raw returns the bytes of the new chunk at coords, as the array presents
// them, in a buffer of codec.GetBuf's, which the caller puts back; nil
// when it is left out: every element the fill value (unless
// --write-empty), or no source chunk it draws on exists. Every buffer
// comes from the pool and goes back to it: a run touches the memory of
// the chunks it has in flight, not of every chunk it reads (for parts
// run at once, each a process of its own, that memory is the cost of a
// part: page faults of a fresh heap).
func (c *copier) raw(ctx context.Context, pa *Array, coords []int) (raw []byte, err error) {
	d, s := pa.Enc.Array(), pa.Src
	bp := codec.GetBuf(int(d.ChunkLen()))
	defer func() {
		if raw == nil {
			codec.PutBuf(bp)
		}
	}()
	var b []byte
	if pa.Same {
		b, err = c.chunks.ChunkInto(ctx, readahead.Ref{Array: s, Path: pa.SrcDir, Coords: coords, PID: pid}, *bp)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("SOURCE: %w", err)
		}
	} else {
		b = (*bp)[:d.ChunkLen()]
		zarr.FillChunk(b, d.Fill)
		box := d.ChunkBox(coords)
		dl := d.Layout(coords)
		sp := codec.GetBuf(int(s.ChunkLen()))
		defer codec.PutBuf(sp)
		found := false
		s.ChunksIn(box, func(sc []int) bool {
			var src []byte
			src, err = c.chunks.ChunkInto(ctx, readahead.Ref{Array: s, Path: pa.SrcDir, Coords: sc, PID: pid}, *sp)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
				return true
			}
			if err != nil {
				err = fmt.Errorf("SOURCE: %w", err)
				return false
			}
			zarr.CopyBox(b, dl, src, s.Layout(sc), box.Intersect(s.ChunkBox(sc)), d.ItemSize)
			found = true
			return true
		})
		if err != nil || !found {
			return nil, err
		}
	}
	if !c.writeEmpty && zarr.AllFill(b, d.Fill) {
		return nil, nil
	}
	return b, nil
}

// verifyUnit reads the unit's files back from DEST, decodes every chunk
// and compares it with the bytes it was made from (raws; nil: left out,
// which must read as absent or, written anyway, as the fill value),
// counting in st those that agree.
func (c *copier) verifyUnit(ctx context.Context, pa *Array, u unit, raws [][]byte, key func(int) string, st *arrayStats) error {
	d := pa.Enc.Array()
	var shard []byte
	for i, co := range u.coords {
		if co == nil {
			continue
		}
		name := key(i)
		var got []byte
		var err error
		if u.shard != nil {
			if shard == nil {
				if shard, err = c.dst.ReadKey(ctx, name); errors.Is(err, fs.ErrNotExist) {
					shard, err = []byte{}, nil
				}
			}
			if err == nil && len(shard) > 0 {
				got, err = d.DecodeFromShard(make([]byte, 0, d.ChunkLen()), shard, co)
			} else if err == nil {
				err = os.ErrNotExist
			}
		} else {
			var b []byte
			if b, err = c.dst.ReadKey(ctx, name); err == nil {
				got, err = d.DecodeChunk(make([]byte, 0, d.ChunkLen()), b)
			}
		}
		want := raws[i]
		if want == nil && (errors.Is(err, fs.ErrNotExist) || err == nil && zarr.AllFill(got, d.Fill)) {
			st.verified.Add(1) // left out: absent, or the fill value
			continue
		}
		if err != nil {
			return fmt.Errorf("verify %s: %w", path.Join(pa.Path, d.ChunkKey(co)), err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("verify %s: the chunk read back differs from the source", path.Join(pa.Path, d.ChunkKey(co)))
		}
		st.verified.Add(1)
	}
	return ctx.Err()
}
