package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/zarr"
)

// How zfuse compress copies: array by array, each in units (a run of new
// chunks in C order, or one shard), with up to two units per worker in
// flight and their chunk bytes bounded by --memory. A unit reads its
// source chunks decoded (the chunk loader decodes on the CPU pool or the
// GPU), encodes its chunks as one batch (the encode pool), and writes each
// file under a temporary name that it then renames: a killed run leaves
// whole files only. An array's metadata is written when all its chunks
// are, the groups' and the consolidated metadata last, so DEST never
// describes data it lacks. runFile, written first, records the plan, so
// that --resume keeps exactly the chunks written with the same settings.

// runFile records an unfinished run in DEST; it is removed at the end.
const runFile = ".zfuse-compress.json"

// tmpSuffix marks files being written.
const tmpSuffix = ".zfuse-tmp"

// chunkSource returns decoded source chunks (readahead.Loader.Chunk): the
// slice is shared and must not be modified; a missing chunk satisfies
// errors.Is(err, fs.ErrNotExist).
type chunkSource interface {
	Chunk(ctx context.Context, a *zarr.Array, path string, coords []int, pid uint32) ([]byte, error)
}

// newEncoders returns what encodes a batch of chunks for --encoder: the
// CPU pool. There is no GPU encoder yet, so "gpu" is refused.
func newEncoders(mode string, pool *codec.Pool) (func(codec.Encoder) codec.BatchEncoder, error) {
	switch mode {
	case "auto", "cpu":
		return pool.EncoderBatch, nil
	case "gpu":
		return nil, errors.New("--encoder gpu: zfuse has no GPU encoder yet (chunks are encoded on the CPU pool with --encoder cpu or auto)")
	}
	return nil, fmt.Errorf("--encoder %q: want auto, cpu or gpu", mode)
}

// A copier runs a compressPlan into DEST.
type copier struct {
	log        *slog.Logger
	src        store.Store
	chunks     chunkSource
	encoders   func(codec.Encoder) codec.BatchEncoder
	dest       string
	workers    int
	memory     int64
	writeEmpty bool
	resume     bool
	verify     bool
	settings   map[string]string // settingFlags' values, recorded in runFile for --resume
	progress   *progress

	stats []*arrayStats // by plan.arrays index, filled by run
	dirs  sync.Map      // directories created
}

// arrayStats count what one array's copy did. Updated atomically.
type arrayStats struct {
	written, empty, kept atomic.Int64 // new chunks written, left out (fill or missing), kept from a previous run
	in, out              atomic.Int64 // decoded bytes of the chunks written, their stored bytes
	took                 time.Duration
}

// run writes the whole plan.
func (c *copier) run(ctx context.Context, p *compressPlan) error {
	if err := os.MkdirAll(c.dest, 0o755); err != nil {
		return fmt.Errorf("DEST: %w", err)
	}
	previous, err := c.previousRun(p)
	if err != nil {
		return err
	}
	for _, pa := range p.arrays {
		if prev, ok := previous[pa.path]; ok && !sameFiles(prev, pa.files) {
			return fmt.Errorf("--resume: DEST %s holds %s written with other settings (%s): refused before writing anything; give the flags it was written with, or a new DEST",
				c.dest, pa.path, filesDiff(prev, pa.files))
		}
	}
	if err := c.writeRun(p); err != nil {
		return err
	}
	c.stats = make([]*arrayStats, len(p.arrays))
	for i, pa := range p.arrays {
		c.stats[i] = &arrayStats{}
		start := time.Now()
		keep := c.resume && sameFiles(previous[pa.path], pa.files)
		if !keep {
			if err := c.clear(pa.path); err != nil {
				return err
			}
		}
		if pa.enc == nil {
			err = c.copyStored(ctx, pa)
		} else {
			err = c.copyArray(ctx, pa, keep, c.stats[i])
		}
		if err != nil {
			return err
		}
		if err := c.writeFiles(pa.path, pa.files); err != nil {
			return err
		}
		c.stats[i].took = time.Since(start)
	}
	if err := c.writeGroups(p); err != nil {
		return err
	}
	return os.Remove(filepath.Join(c.dest, runFile))
}

// previousRun returns what an earlier run into DEST planned for each
// array (from runFile), or, for arrays whose metadata was written, that
// metadata; with --resume, an array whose plan is the same keeps its
// chunks. Leftover temporary files are removed.
func (c *copier) previousRun(p *compressPlan) (map[string]map[string][]byte, error) {
	prev := map[string]map[string][]byte{}
	if !c.resume {
		return prev, nil
	}
	if b, err := os.ReadFile(filepath.Join(c.dest, runFile)); err == nil {
		var r struct {
			Arrays map[string]map[string]string `json:"arrays"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("DEST: %s: %w", runFile, err)
		}
		for p, files := range r.Arrays {
			prev[p] = map[string][]byte{}
			for name, s := range files {
				prev[p][name] = []byte(s)
			}
		}
	}
	for _, pa := range p.arrays {
		if _, ok := prev[pa.path]; ok {
			continue
		}
		files := map[string][]byte{}
		for name := range pa.files {
			if b, err := os.ReadFile(c.path(pa.path, name)); err == nil {
				files[name] = b
			}
		}
		if len(files) > 0 {
			prev[pa.path] = files
		}
	}
	err := filepath.WalkDir(c.dest, func(p string, d iofs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), tmpSuffix) {
			err = os.Remove(p)
		}
		return err
	})
	return prev, err
}

// writeRun records the plan in runFile before any chunk is written.
func (c *copier) writeRun(p *compressPlan) error {
	r := map[string]map[string]string{}
	for _, pa := range p.arrays {
		r[pa.path] = map[string]string{}
		for name, b := range pa.files {
			r[pa.path][name] = string(b)
		}
	}
	b, err := json.MarshalIndent(map[string]any{"zfuse_compress": 1, "flags": c.settings, "arrays": r}, "", " ")
	if err != nil {
		return err
	}
	return c.write(filepath.Join(c.dest, runFile), b)
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

// clear removes what an earlier run wrote for the array at p (not the
// same settings, or no --resume): its chunks would not match.
func (c *copier) clear(p string) error {
	dir := c.path(p, "")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if p == "." && e.Name() == runFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// path is the file of key in the array or group directory p of DEST.
func (c *copier) path(p, key string) string {
	return filepath.Join(c.dest, filepath.FromSlash(p), filepath.FromSlash(key))
}

// write writes b to name under a temporary name, then renames it.
func (c *copier) write(name string, b []byte) error {
	dir := filepath.Dir(name)
	if _, ok := c.dirs.Load(dir); !ok {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c.dirs.Store(dir, true)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(name)+tmpSuffix)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}

func (c *copier) writeFiles(p string, files map[string][]byte) error {
	for name, b := range files {
		if err := c.write(c.path(p, name), b); err != nil {
			return err
		}
	}
	return nil
}

// writeGroups writes every group's metadata, and last the root's
// consolidated metadata over everything written.
func (c *copier) writeGroups(p *compressPlan) error {
	docs := map[string]map[string][]byte{}
	for _, pa := range p.arrays {
		docs[strings.TrimPrefix(pa.path, ".")] = pa.files
	}
	var root map[string][]byte
	for _, g := range p.groups {
		if g.path == "." {
			root = g.files
			docs[""] = g.files
			continue
		}
		docs[g.path] = g.files
		if err := c.writeFiles(g.path, g.files); err != nil {
			return err
		}
	}
	if root == nil {
		return nil
	}
	if p.consolidated != 0 {
		cf, err := zarr.Consolidate(p.consolidated, docs)
		if err != nil {
			return err
		}
		if p.consolidated == 2 {
			if err := c.writeFiles(".", root); err != nil {
				return err
			}
		}
		return c.writeFiles(".", cf)
	}
	return c.writeFiles(".", root)
}

// copyStored copies every value under an array that cannot be encoded as
// it is stored: the keys of its chunk grid (remote stores may not list
// chunk keys), then whatever else the store lists under it.
func (c *copier) copyStored(ctx context.Context, pa *planArray) error {
	done := map[string]bool{}
	copyKey := func(key string) error {
		if done[key] {
			return nil
		}
		done[key] = true
		b, err := c.src.ReadKey(ctx, key)
		if errors.Is(err, iofs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(key, pa.srcDir), "/")
		return c.write(c.path(pa.path, rel), b)
	}
	if a := pa.src; a != nil {
		for i := range a.NumChunks() {
			key, _, _ := a.StoredKey(a.Coords(i))
			if err := copyKey(path.Join(pa.srcDir, key)); err != nil {
				return err
			}
		}
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		es, err := store.List(ctx, c.src, dir)
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
	err := walk(pa.path)
	if errors.Is(err, store.ErrNotSupported) {
		if pa.src == nil {
			c.log.Warn("array copied without its chunks: the store cannot list them and its metadata does not parse", "key", pa.path)
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

// units returns the array's units: runs of up to 16 chunks (and 16 MiB)
// unsharded, one shard each sharded.
func units(d *zarr.Array) (n int64, at func(i int64) unit) {
	if sh := d.Shard(); sh != nil {
		grid := d.StoredGrid()
		count := int64(1)
		for _, g := range grid {
			count *= int64(g)
		}
		return count, func(i int64) unit {
			s := unravelGrid(i, grid)
			u := unit{shard: s, coords: make([][]int, sh.InnerChunks())}
			for k := range u.coords {
				if c, ok := d.InnerCoords(s, k); ok {
					u.coords[k] = c
				}
			}
			return u
		}
	}
	per := int64(max(min(16, (16<<20)/max(d.ChunkLen(), 1)), 1))
	total := d.NumChunks()
	return (total + per - 1) / per, func(i int64) unit {
		var u unit
		for j := i * per; j < min((i+1)*per, total); j++ {
			u.coords = append(u.coords, d.Coords(j))
		}
		return u
	}
}

func unravelGrid(i int64, grid []int) []int {
	c := make([]int, len(grid))
	for d := len(grid) - 1; d >= 0; d-- {
		c[d] = int(i % int64(grid[d]))
		i /= int64(grid[d])
	}
	return c
}

// copyArray writes every chunk of an array that is encoded.
func (c *copier) copyArray(ctx context.Context, pa *planArray, keep bool, st *arrayStats) error {
	d := pa.enc.Array()
	n, at := units(d)
	if n == 0 || d.NumChunks() == 0 {
		return nil // an empty array: metadata only
	}
	first := at(0)
	weight := int64(len(first.coords)) * (d.ChunkLen() + int64(pa.enc.Chunk().MaxEncodedLen(int(d.ChunkLen()))))
	sem := semaphore.NewWeighted(max(c.memory, weight))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2 * c.workers)
	enc := c.encoders(pa.enc.Chunk())
	for i := range n {
		if err := sem.Acquire(gctx, weight); err != nil {
			break // the group's error (or ctx's) is returned below
		}
		g.Go(func() error {
			defer sem.Release(weight)
			return c.unit(gctx, pa, enc, at(i), keep, st)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// bufs are encode buffers, reused: a run allocates as many as it has in
// flight, not one per chunk (each a page fault per 4 KiB when fresh).
var bufs sync.Pool // of *[]byte

// getBuf returns an empty buffer of capacity n or more.
func getBuf(n int) []byte {
	if p, _ := bufs.Get().(*[]byte); p != nil && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

// putBuf returns b's array to bufs; the caller keeps no reference to it.
func putBuf(b []byte) {
	if cap(b) > 0 {
		b = b[:0]
		bufs.Put(&b)
	}
}

// pid names compress's reads to the chunk loader.
var pid = uint32(os.Getpid())

// unit copies one unit.
func (c *copier) unit(ctx context.Context, pa *planArray, enc codec.BatchEncoder, u unit, keep bool, st *arrayStats) error {
	d := pa.enc.Array()
	key := func(i int) string { return d.ChunkKey(u.coords[i]) }
	if u.shard != nil {
		shardKey, _, _ := d.StoredKey(firstCoords(u))
		key = func(int) string { return shardKey }
	}
	// Chunks already written by a run with the same settings are kept
	// (and with --verify checked against the source).
	kept := make([]bool, len(u.coords))
	if keep {
		written := map[string]bool{} // by key: one stat for all chunks of a shard
		for i, co := range u.coords {
			if co == nil {
				continue
			}
			k := key(i)
			w, ok := written[k]
			if !ok {
				_, err := os.Stat(c.path(pa.path, k))
				w = err == nil
				written[k] = w
			}
			kept[i] = w
		}
	}
	raws := make([][]byte, len(u.coords))
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
		st.kept.Add(int64(len(u.coords)))
		c.progress.add(int64(len(u.coords)), 0, 0)
		if c.verify {
			return c.verifyUnit(ctx, pa, u, raws, key)
		}
		return nil
	}
	var jobs []codec.Job
	var idx []int
	defer func() {
		for _, j := range jobs {
			putBuf(j.Dst)
		}
	}()
	nkept := 0
	for i, raw := range raws {
		if kept[i] && u.shard == nil {
			nkept++ // its file stays
			continue
		}
		if raw != nil {
			jobs = append(jobs, codec.Job{Src: raw, Dst: getBuf(pa.enc.Chunk().MaxEncodedLen(len(raw)))})
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
			return fmt.Errorf("encode %s: %w", path.Join(pa.path, d.ChunkKey(u.coords[idx[j]])), job.Err)
		}
		encoded[idx[j]] = job.Dst
	}
	var in, out int64
	if u.shard != nil {
		if len(jobs) > 0 {
			b, err := pa.enc.Shard(encoded)
			if err != nil {
				return fmt.Errorf("shard %s: %w", path.Join(pa.path, key(0)), err)
			}
			if err := c.write(c.path(pa.path, key(0)), b); err != nil {
				return err
			}
			c.log.Debug("wrote", "key", path.Join(pa.path, key(0)), "n", len(b))
			out = int64(len(b))
		}
	} else {
		for i, b := range encoded {
			if b == nil {
				continue
			}
			if err := c.write(c.path(pa.path, key(i)), b); err != nil {
				return err
			}
			c.log.Debug("wrote", "key", path.Join(pa.path, key(i)), "n", len(b))
			out += int64(len(b))
		}
	}
	in = int64(len(jobs)) * d.ChunkLen()
	inside := 0
	for _, co := range u.coords {
		if co != nil {
			inside++
		}
	}
	st.written.Add(int64(len(jobs)))
	st.kept.Add(int64(nkept))
	st.empty.Add(int64(inside - len(jobs) - nkept))
	st.in.Add(in)
	st.out.Add(out)
	c.progress.add(int64(len(u.coords)), in, out)
	if c.verify {
		return c.verifyUnit(ctx, pa, u, raws, key)
	}
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
// them; nil when it is left out: every element the fill value (unless
// --write-empty), or no source chunk it draws on exists.
func (c *copier) raw(ctx context.Context, pa *planArray, coords []int) ([]byte, error) {
	d, s := pa.enc.Array(), pa.src
	var b []byte
	if pa.same {
		src, err := c.chunks.Chunk(ctx, s, pa.srcDir, coords, pid)
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("SOURCE: %w", err)
		}
		b = src
	} else {
		b = make([]byte, d.ChunkLen())
		zarr.FillChunk(b, d.Fill)
		box := d.ChunkBox(coords)
		dl := d.Layout(coords)
		found := false
		var err error
		s.ChunksIn(box, func(sc []int) bool {
			var src []byte
			src, err = c.chunks.Chunk(ctx, s, pa.srcDir, sc, pid)
			if errors.Is(err, iofs.ErrNotExist) {
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
// which must read as absent or, written anyway, as the fill value).
func (c *copier) verifyUnit(ctx context.Context, pa *planArray, u unit, raws [][]byte, key func(int) string) error {
	d := pa.enc.Array()
	var shard []byte
	for i, co := range u.coords {
		if co == nil {
			continue
		}
		name := c.path(pa.path, key(i))
		var got []byte
		var err error
		if u.shard != nil {
			if shard == nil {
				if shard, err = os.ReadFile(name); errors.Is(err, os.ErrNotExist) {
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
			if b, err = os.ReadFile(name); err == nil {
				got, err = d.DecodeChunk(make([]byte, 0, d.ChunkLen()), b)
			}
		}
		want := raws[i]
		if want == nil { // left out: absent, or the fill value
			if errors.Is(err, iofs.ErrNotExist) {
				continue
			}
			if err == nil && zarr.AllFill(got, d.Fill) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("verify %s: %w", path.Join(pa.path, d.ChunkKey(co)), err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("verify %s: the chunk read back differs from the source", path.Join(pa.path, d.ChunkKey(co)))
		}
	}
	return ctx.Err()
}
