package convert

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/zfuse/zfuse/codec"
)

// Options shape what is written (zfuse compress's --format, --codec,
// --chunks and --shard).
type Options struct {
	Format    int     // 2, 3, or 0: keep each array's
	Stages    []Stage // the codecs, filters first; none: stored raw
	Chunks    []int   // the chunk shape of arrays of its rank (-1: the whole axis); nil: keep
	ShardKeep bool    // a sharded source's shard shape, when its chunks are kept
	ShardSize int64   // shards of whole chunks per axis within this size; 0: none
	ShardPer  []int   // chunks per shard of arrays of its rank
	ShardV3   bool    // Format is 3 because sharding asks for it (arrays stored as v2 become v3)
}

// A Stage is one entry of --codec: a numcodecs id and its settings, in
// order ("blosc:zstd:5" is ID blosc, Args [zstd 5]; "" takes the default).
type Stage struct {
	ID   string
	Args []string
}

// Codecs returns the numcodecs configurations of --codec for an array of
// dtype (a typestr) and item size: the compressor (nil for none) and the
// filters, and the filters of --codec that do not suit the dtype, left
// out (delta encodes integers stored as themselves): a store that mixes
// floats and integers gets delta where it applies.
func (o Options) Codecs(dtype string, itemSize int) (comp codec.Config, filters []codec.Config, skipped []string, err error) {
	for _, st := range o.Stages {
		m := map[string]any{"id": st.ID}
		arg := func(i int, def string) string {
			if i < len(st.Args) && st.Args[i] != "" {
				return st.Args[i]
			}
			return def
		}
		num := func(i int, def string) (int, error) {
			n, err := strconv.Atoi(arg(i, def))
			if err != nil {
				return 0, fmt.Errorf("%s: %q is not a number", st.ID, arg(i, def))
			}
			return n, nil
		}
		switch st.ID {
		case "blosc":
			m["cname"] = arg(0, "lz4")
			if m["clevel"], err = num(1, "5"); err != nil {
				return nil, nil, nil, err
			}
			sh, ok := map[string]int{"noshuffle": 0, "0": 0, "shuffle": 1, "1": 1, "bitshuffle": 2, "2": 2, "auto": -1, "-1": -1}[arg(2, "shuffle")]
			if !ok {
				return nil, nil, nil, fmt.Errorf("blosc: shuffle %q: want noshuffle, shuffle, bitshuffle or auto", arg(2, ""))
			}
			m["shuffle"] = sh
			if m["blocksize"], err = num(3, "0"); err != nil {
				return nil, nil, nil, err
			}
		case "zstd":
			m["level"], err = num(0, "3")
		case "gzip", "zlib":
			m["level"], err = num(0, map[string]string{"gzip": "6", "zlib": "1"}[st.ID])
		case "lz4":
			m["acceleration"], err = num(0, "1")
		case "delta":
			m["dtype"] = dtype
		case "shuffle":
			m["elementsize"] = itemSize
		}
		if err != nil {
			return nil, nil, nil, err
		}
		b, _ := json.Marshal(m)
		var c codec.Config
		json.Unmarshal(b, &c)
		if _, err := codec.NewEncoderConfig(c, itemSize); err != nil {
			if st.ID == "delta" { // its one setting is the dtype
				skipped = append(skipped, st.ID)
				continue
			}
			return nil, nil, nil, fmt.Errorf("%s: %w", st.ID, err)
		}
		if st.ID == "delta" || st.ID == "shuffle" {
			filters = append(filters, c)
		} else {
			comp = c
		}
	}
	return comp, filters, skipped, nil
}
