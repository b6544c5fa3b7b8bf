package compress

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/internal/bytesize"
)

// The settings of zfuse compress as its flags spell them: --format,
// --codec, --chunks and --shard. Each is checked alone where the flag is
// parsed, and ParseOptions parses them together.

// ParseOptions reads --format, --codec, --chunks and --shard into Options,
// saying which flag is wrong, and refuses what does not combine (a
// *SettingsError): a shard size or shape with --format v2. Sharding is
// v3's, so with --format keep arrays stored as v2 are written as v3
// (ShardV3; the plan says which).
func ParseOptions(format, codecs, chunks, shard string) (Options, error) {
	var o Options
	var err error
	if o.Format, err = ParseFormat(format); err != nil {
		return o, fmt.Errorf("--format %q: %w", format, err)
	}
	if o.Stages, err = ParseStages(codecs); err != nil {
		return o, fmt.Errorf("--codec %q: %w", codecs, err)
	}
	if o.Chunks, err = ParseChunks(chunks); err != nil {
		return o, fmt.Errorf("--chunks: %w", err)
	}
	if o.ShardKeep, o.ShardSize, o.ShardPer, err = ParseShard(shard); err != nil {
		return o, fmt.Errorf("--shard: %w", err)
	}
	switch sharded := o.ShardSize > 0 || o.ShardPer != nil; {
	case sharded && o.Format == 2:
		return o, settingsErrorf("--format v2 --shard %s: Zarr v2 has no sharding (a shard size or shape writes Zarr v3)", shard)
	case sharded && o.Format == 0:
		o.Format, o.ShardV3 = 3, true
	}
	return o, nil
}

// ParseFormat reads --format: 2, 3, or 0 for keep.
func ParseFormat(s string) (int, error) {
	switch s {
	case "keep":
		return 0, nil
	case "v2", "2":
		return 2, nil
	case "v3", "3":
		return 3, nil
	}
	return 0, errors.New("want v2, v3 or keep")
}

// ParseStages reads --codec: its stages, filters first, each checked with
// a stand-in dtype (<i4).
func ParseStages(s string) ([]Stage, error) {
	var stages []Stage
	last := strings.Count(s, ",")
	for i, p := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(p), ":")
		st := Stage{ID: parts[0], Args: parts[1:]}
		switch st.ID {
		case "none", "raw":
			if len(st.Args) > 0 || last > 0 {
				return nil, errors.New("none stands alone")
			}
			continue
		case "delta", "shuffle":
			if len(st.Args) > 0 {
				return nil, fmt.Errorf("%s takes no settings (it uses the array's dtype)", st.ID)
			}
		case "blosc", "zstd", "lz4", "gzip", "zlib":
			if i != last {
				return nil, fmt.Errorf("the compressor %s must come last", st.ID)
			}
		default:
			return nil, fmt.Errorf("unknown codec %q (want blosc, zstd, lz4, gzip, zlib, delta, shuffle or none)", st.ID)
		}
		stages = append(stages, st)
	}
	if _, _, _, err := (Options{Stages: stages}).Codecs("<i4", 4); err != nil {
		return nil, err
	}
	return stages, nil
}

// ParseChunks reads --chunks: nil for keep.
func ParseChunks(s string) ([]int, error) {
	if s == "keep" {
		return nil, nil
	}
	return parseShape(s, true)
}

// ParseShard reads --shard: keep, none (all false and nil), a size, or
// chunks per axis.
func ParseShard(s string) (keep bool, size int64, per []int, err error) {
	switch {
	case s == "keep":
		return true, 0, nil, nil
	case s == "none":
		return false, 0, nil, nil
	case strings.Contains(s, "x") || !strings.ContainsAny(s, "BbKkMmGgTt"):
		per, err := parseShape(s, false)
		return false, 0, per, err
	}
	n, err := bytesize.Parse(s)
	if err != nil || n <= 0 {
		return false, 0, nil, fmt.Errorf("%q: want keep, none, a size such as 64MiB, or chunks per axis such as 2x2x2", s)
	}
	return false, n, nil, nil
}

// parseShape reads "1x512x512"; with whole, -1 stands for a whole axis.
func parseShape(s string, whole bool) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, "x") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n == 0 || n < -1 || (n == -1 && !whole) {
			return nil, fmt.Errorf("%q is not a shape like 2x512x512", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Encoders returns what encodes a batch of chunks for --encoder mode
// (Config.Encoders): the CPU pool. There is no GPU encoder yet, so "gpu" is refused.
func Encoders(mode string, pool *codec.Pool) (func(codec.Encoder) codec.BatchEncoder, error) {
	switch mode {
	case "auto", "cpu":
		return pool.EncoderBatch, nil
	case "gpu":
		return nil, errors.New("--encoder gpu: zfuse has no GPU encoder yet (chunks are encoded on the CPU pool with --encoder cpu or auto)")
	}
	return nil, fmt.Errorf("--encoder %q: want auto, cpu or gpu", mode)
}
