package convert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/tree"
	"github.com/zfuse/zfuse/zarr"
)

// A Plan is everything to write, decided before the first byte: what
// each array and group of the source becomes. It is not modified once
// NewPlan returns it.
type Plan struct {
	Arrays       []*Array
	Groups       []*Group
	Consolidated int  // format of the root's consolidated metadata; 0: none
	Rechunks     bool // some array is rechunked: its source chunks are read more than once
}

// An Array is one array of the plan: where it comes from and what it
// becomes.
type Array struct {
	Path    string            // store key of the array directory; "." for the root
	SrcDir  string            // the same as the chunk loader takes it: "" for the root
	Src     *zarr.Array       // as presented by the source; nil when its metadata does not parse
	Files   map[string][]byte // its metadata files to write
	Enc     *zarr.Encoding    // nil: copied as stored
	Why     error             // copied as stored: why
	Skipped []string          // filters of Options.Stages left out: they do not suit its dtype (delta on floats)
	Same    bool              // each new chunk is one source chunk, byte for byte
}

// A Group is one group of the plan and its metadata files to write.
type Group struct {
	Path  string
	Files map[string][]byte
}

// NewPlan walks the source tree (presenting the store src) and decides
// each array's metadata and encoding, and each group's. Nothing is
// written. An error about settings that apply to no array of the source
// is a *SettingsError.
func NewPlan(ctx context.Context, tr *tree.Tree, src store.Store, o Options, log *slog.Logger) (*Plan, error) {
	infos, err := tr.Arrays(ctx)
	if err != nil {
		return nil, fmt.Errorf("SOURCE: %w", err)
	}
	groups, err := tr.Groups(ctx)
	if err != nil {
		return nil, fmt.Errorf("SOURCE: %w", err)
	}
	p := &Plan{}
	var asV3 []string // arrays stored as v2 that --shard writes as v3
	for _, in := range infos {
		if in.Unreadable != nil {
			return nil, fmt.Errorf("SOURCE: %s: its metadata could not be read: %w", in.Path, in.Unreadable)
		}
		pa, err := planOne(ctx, src, in, o, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Path, err)
		}
		p.Rechunks = p.Rechunks || (pa.Enc != nil && !pa.Same)
		p.Arrays = append(p.Arrays, pa)
		if o.ShardV3 && in.Format == 2 && pa.Enc != nil {
			asV3 = append(asV3, in.Path)
		}
	}
	if err := o.fits(p.Arrays); err != nil {
		return nil, err
	}
	if len(asV3) > 0 {
		log.Info("--shard writes Zarr v3: arrays stored as v2 are written as v3 (--format v3 is implied)", "arrays", strings.Join(asV3, ","))
	}
	for _, g := range groups {
		files, err := readMeta(ctx, src, g.Path, zarr.GroupFile, zarr.AttrsFile, zarr.MetadataFile, zarr.ConsolidatedFile)
		if err != nil {
			return nil, err
		}
		format := g.Format
		if o.Format != 0 {
			format = o.Format
		}
		if g.Path == "." {
			if files[zarr.ConsolidatedFile] != nil {
				p.Consolidated = format
			} else if b := files[zarr.MetadataFile]; b != nil {
				if _, grp, err := zarr.ParseV3(b); err == nil && grp != nil && grp.Consolidated != nil {
					p.Consolidated = format
				}
			}
		}
		gf, err := zarr.StoreGroup(files, format)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g.Path, err)
		}
		p.Groups = append(p.Groups, &Group{Path: g.Path, Files: gf})
	}
	return p, nil
}

// readMeta reads the named metadata files of directory dir that exist.
func readMeta(ctx context.Context, s store.Store, dir string, names ...string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, name := range names {
		b, err := s.ReadKey(ctx, path.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// planOne decides one array.
func planOne(ctx context.Context, src store.Store, in tree.ArrayInfo, o Options, log *slog.Logger) (*Array, error) {
	pa := &Array{Path: in.Path, SrcDir: in.Prefix(), Src: in.Array}
	files, err := readMeta(ctx, src, in.Path, zarr.ArrayFile, zarr.AttrsFile, zarr.MetadataFile)
	if err != nil {
		return nil, err
	}
	if in.PassThrough != nil || in.Array == nil {
		pa.Why = in.PassThrough
		if pa.Why == nil {
			pa.Why = errors.New("its metadata does not parse")
		}
		log.Warn("array cannot be encoded: copied as stored", "key", in.Path, "err", pa.Why)
		pa.Files = files
		return pa, nil
	}
	a := in.Array
	t := target(in, o, log)
	if t.Compressor, t.Filters, pa.Skipped, err = o.Codecs(a.DType, a.ItemSize); err != nil {
		return nil, fmt.Errorf("--codec: %w", err)
	}
	if len(pa.Skipped) > 0 {
		log.Warn("--codec: "+strings.Join(pa.Skipped, ",")+" does not suit this array (it encodes integers stored as themselves): written without it", "key", in.Path, "dtype", a.DType)
	}
	pa.Files, err = zarr.StoreArray(files, a, t)
	if errors.Is(err, codec.ErrNotRaw) && t.Format != in.Format {
		// No equivalent in the other format (a structured dtype in v3):
		// encoded all the same, in the format it has.
		log.Warn("array kept in its format", "key", in.Path, "format", in.Format, "err", err)
		t.Format, t.Shard = in.Format, nil
		pa.Files, err = zarr.StoreArray(files, a, t)
	}
	if err != nil {
		return nil, err
	}
	if pa.Enc, err = zarr.NewEncoding(pa.Files); err != nil {
		return nil, err
	}
	d := pa.Enc.Array()
	pa.Same = slices.Equal(d.Chunks, a.Chunks) && (d.Order == a.Order || len(a.Shape) <= 1)
	return pa, nil
}

// target decides the format, chunk shape and shards an array is written
// with; its codecs are for planOne to add.
func target(in tree.ArrayInfo, o Options, log *slog.Logger) zarr.Target {
	a := in.Array
	t := zarr.Target{Format: in.Format, Chunks: a.Chunks}
	if o.Format != 0 {
		t.Format = o.Format
	}
	rank := len(a.Shape)
	if o.Chunks != nil {
		if len(o.Chunks) == rank {
			t.Chunks = make([]int, rank)
			for i, c := range o.Chunks {
				t.Chunks[i] = c
				if c == -1 {
					t.Chunks[i] = max(a.Shape[i], 1)
				}
			}
		} else {
			log.Warn("--chunks is for arrays of another rank: chunks kept", "key", in.Path, "rank", rank)
		}
	}
	if t.Format == 3 {
		t.Shard = shardShape(in, t.Chunks, o, log)
	}
	return t
}

// A SettingsError says that settings apply to no array of the source:
// the command line is wrong, not the source.
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

func settingsErrorf(format string, args ...any) error {
	return &SettingsError{fmt.Errorf(format, args...)}
}

// Dims formats a shape as "100x200" ("()" for 0-d), as zfuse's messages
// and tables write shapes.
func Dims(d []int) string {
	if len(d) == 0 {
		return "()"
	}
	s := make([]string, len(d))
	for i, n := range d {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, "x")
}

// fits refuses settings that apply to no array of the plan: --chunks or
// --shard chunks per axis for a rank no array has, or a filter that suits
// no array (each is for the arrays it suits, and says which it left out;
// for none, the command line is wrong).
func (o Options) fits(arrays []*Array) error {
	var ranks []int
	var skipped, encoded int
	for _, pa := range arrays {
		if pa.Enc == nil {
			continue
		}
		encoded++
		ranks = append(ranks, len(pa.Src.Shape))
		if len(pa.Skipped) > 0 {
			skipped++
		}
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	has := func(rank int) string {
		var rs []string
		for _, r := range ranks {
			rs = append(rs, strconv.Itoa(r))
		}
		return fmt.Sprintf("SOURCE has no array of rank %d (its ranks: %s)", rank, strings.Join(rs, ", "))
	}
	switch {
	case encoded == 0:
		return nil
	case o.Chunks != nil && !slices.Contains(ranks, len(o.Chunks)):
		return settingsErrorf("--chunks %s is for arrays of rank %d: %s", Dims(o.Chunks), len(o.Chunks), has(len(o.Chunks)))
	case o.ShardPer != nil && !slices.Contains(ranks, len(o.ShardPer)):
		return settingsErrorf("--shard %s is for arrays of rank %d: %s", Dims(o.ShardPer), len(o.ShardPer), has(len(o.ShardPer)))
	case skipped == encoded:
		return settingsErrorf("--codec: delta encodes integers stored as themselves, and no array of SOURCE is one: leave it out")
	}
	return nil
}

// shardShape decides the chunks per shard of a v3 array written with the
// chunk shape chunks: as the source's (--shard keep), none, within a size,
// or as given for arrays of that rank; nil for unsharded.
func shardShape(in tree.ArrayInfo, chunks []int, o Options, log *slog.Logger) []int {
	a := in.Array
	rank := len(a.Shape)
	grid := make([]int, rank)
	for i := range rank {
		grid[i] = max((a.Shape[i]+chunks[i]-1)/chunks[i], 1)
	}
	switch {
	case o.ShardKeep && in.Shards != nil && slices.Equal(chunks, a.Chunks):
		per := make([]int, rank)
		for i := range rank {
			per[i] = in.Shards[i] / a.Chunks[i]
		}
		return per
	case o.ShardPer != nil && len(o.ShardPer) == rank:
		return o.ShardPer
	case o.ShardPer != nil:
		log.Warn("--shard is for arrays of another rank: not sharded", "key", in.Path, "rank", rank)
	case o.ShardSize > 0:
		// Whole chunks per axis, the last (fastest) axis first, as many as
		// fit in the size and the array holds.
		chunkLen := int64(a.ItemSize)
		for _, c := range chunks {
			chunkLen *= int64(c)
		}
		room := max(o.ShardSize/max(chunkLen, 1), 1)
		per := make([]int, rank)
		for i := rank - 1; i >= 0; i-- {
			per[i] = int(min(int64(grid[i]), room))
			room /= int64(per[i])
		}
		return per
	}
	return nil
}
