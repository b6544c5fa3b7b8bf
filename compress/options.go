package compress

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
		c, err := st.config(dtype, itemSize)
		if err != nil {
			return nil, nil, nil, err
		}
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

// config returns the numcodecs configuration of st for an array of dtype
// and item size, defaults filled in; whether the codec can encode such an
// array is for Codecs to check.
func (st Stage) config(dtype string, itemSize int) (codec.Config, error) {
	m := map[string]any{"id": st.ID}
	var err error
	switch st.ID {
	case "blosc":
		m["cname"] = st.arg(0, "lz4")
		if m["clevel"], err = st.num(1, "5"); err != nil {
			return nil, err
		}
		sh, ok := map[string]int{"noshuffle": 0, "0": 0, "shuffle": 1, "1": 1, "bitshuffle": 2, "2": 2, "auto": -1, "-1": -1}[st.arg(2, "shuffle")]
		if !ok {
			return nil, fmt.Errorf("blosc: shuffle %q: want noshuffle, shuffle, bitshuffle or auto", st.arg(2, ""))
		}
		m["shuffle"] = sh
		m["blocksize"], err = st.num(3, "0")
	case "zstd":
		m["level"], err = st.num(0, "3")
	case "gzip", "zlib":
		m["level"], err = st.num(0, map[string]string{"gzip": "6", "zlib": "1"}[st.ID])
	case "lz4":
		m["acceleration"], err = st.num(0, "1")
	case "delta":
		m["dtype"] = dtype
	case "shuffle":
		m["elementsize"] = itemSize
	}
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(m)
	var c codec.Config
	json.Unmarshal(b, &c)
	return c, nil
}

// arg returns st's setting i, or def when it is not given.
func (st Stage) arg(i int, def string) string {
	if i < len(st.Args) && st.Args[i] != "" {
		return st.Args[i]
	}
	return def
}

// num returns st's setting i (or def) as a number.
func (st Stage) num(i int, def string) (int, error) {
	n, err := strconv.Atoi(st.arg(i, def))
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", st.ID, st.arg(i, def))
	}
	return n, nil
}
