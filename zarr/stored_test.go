package zarr

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKeyFacts checks the facts of the key model that callers ask instead
// of formatting coordinates: the presented key prefix, the directories of
// "/" keys, where their stored values lie, and the shard shape, for each
// chunk key encoding, sharded or not (a transpose before the sharding
// codec too), and for the --as-v2 view.
func TestKeyFacts(t *testing.T) {
	const (
		slash   = `{"name":"default","configuration":{"separator":"/"}}`
		dot     = `{"name":"default","configuration":{"separator":"."}}`
		v2Slash = `{"name":"v2","configuration":{"separator":"/"}}`
		plain   = `[{"name":"bytes","configuration":{"endian":"little"}}]`
		// shards of 4×6 of inner chunks 2×3: 2×2 inner chunks per shard.
		sharded = `[{"name":"sharding_indexed","configuration":{"chunk_shape":[2,3],"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}}]`
		// the sharding codec's axes are the array's reversed: shards of 4×6
		// in array axes are 6×4 in the codec's, of inner chunks 3×1, so a
		// shard holds 4 chunks along the first array axis and 2 along the
		// second.
		transposed = `[{"name":"transpose","configuration":{"order":[1,0]}},{"name":"sharding_indexed","configuration":{"chunk_shape":[3,1],"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}}]`
	)
	tests := []struct {
		name, enc, codecs string
		prefix            string // KeyPrefix
		per               []int  // ChunksPerShard
		shards            []int  // ShardShape
		dirs              map[string][]int
		notDirs           []string
		stored            map[string]string // StoredChunkDir of the coordinates, written "1,0"
	}{
		{"default /", slash, plain, "c", []int{1, 1}, nil,
			map[string][]int{"c": {}, "c/1": {1}, "c/3": {3}},
			[]string{"c/1/2", "", "1", "c/4", "c/01", "c/", "x"},
			map[string]string{"": "c", "1": "c/1"}},
		{"default .", dot, plain, "c", []int{1, 1}, nil,
			nil, []string{"c", "c/1", ""}, nil},
		{"v2 /", v2Slash, plain, "", []int{1, 1}, nil,
			map[string][]int{"2": {2}},
			[]string{"", "c", "2/1", "4", "c/2"},
			map[string]string{"": "", "2": "2"}},
		{"sharded", slash, sharded, "c", []int{2, 2}, []int{4, 6},
			map[string][]int{"c": {}, "c/3": {3}},
			[]string{"c/4", "c/1/1"},
			map[string]string{"": "c", "1": "c/0", "2": "c/1"}},
		{"transposed", slash, transposed, "c", []int{4, 2}, []int{4, 6},
			map[string][]int{"c": {}},
			nil,
			map[string]string{"3": "c/0", "4": "c/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shape, chunks := "[8, 12]", "[4, 6]"
			if tt.shards == nil {
				shape, chunks = "[4, 6]", "[1, 2]"
			}
			a, _, err := ParseV3(v3Doc(map[string]string{"shape": shape, "chunk_key_encoding": tt.enc, "codecs": tt.codecs,
				"chunk_grid": `{"name":"regular","configuration":{"chunk_shape":` + chunks + `}}`}))
			if err != nil || a.PassThrough != nil {
				t.Fatalf("ParseV3: %v, %v", err, a.PassThrough)
			}
			if a.KeyPrefix() != tt.prefix || !slices.Equal(a.ChunksPerShard(), tt.per) || !slices.Equal(a.ShardShape(), tt.shards) {
				t.Errorf("KeyPrefix %q, ChunksPerShard %v, ShardShape %v; want %q, %v, %v",
					a.KeyPrefix(), a.ChunksPerShard(), a.ShardShape(), tt.prefix, tt.per, tt.shards)
			}
			for rel, want := range tt.dirs {
				if got, ok := a.ParseChunkDir(rel); !ok || !slices.Equal(got, want) {
					t.Errorf("ParseChunkDir(%q) = %v, %v; want %v", rel, got, ok, want)
				}
			}
			for _, rel := range tt.notDirs {
				if got, ok := a.ParseChunkDir(rel); ok {
					t.Errorf("ParseChunkDir(%q) = %v, want not a directory", rel, got)
				}
			}
			for p, want := range tt.stored {
				var c []int
				if p != "" {
					c = []int{atoi(t, p)}
				}
				if got := a.StoredChunkDir(c); got != want {
					t.Errorf("StoredChunkDir(%v) = %q, want %q", c, got, want)
				}
			}
			if a.Separator == "/" {
				checkDirs(t, a)
				v, err := a.AsV2()
				if err != nil {
					t.Fatal(err)
				}
				if v.KeyPrefix() != "" || !slices.Equal(v.ChunksPerShard(), tt.per) || !slices.Equal(v.ShardShape(), tt.shards) {
					t.Errorf("--as-v2 view: KeyPrefix %q, ChunksPerShard %v, ShardShape %v", v.KeyPrefix(), v.ChunksPerShard(), v.ShardShape())
				}
				checkDirs(t, v)
			}
		})
	}
}

// checkDirs checks, for every presented chunk of a (keys with the "/"
// separator), that each directory on the way to its key parses to the
// coordinates it fixes, and that the stored directory of those
// coordinates is the directory of the chunk's stored key.
func checkDirs(t *testing.T, a *Array) {
	t.Helper()
	for i := range a.NumChunks() {
		c := a.Coords(i)
		key := a.ChunkKey(c)
		skey, _, _ := a.StoredKey(c)
		parts := strings.Split(key, "/")
		first := len(parts) - len(c) // the prefix, if any, fixes no coordinate
		for k := range len(c) {
			dir := strings.Join(parts[:first+k], "/")
			if dir == "" {
				continue
			}
			if got, ok := a.ParseChunkDir(dir); !ok || !slices.Equal(got, c[:k]) {
				t.Fatalf("chunk %q: ParseChunkDir(%q) = %v, %v; want %v", key, dir, got, ok, c[:k])
			}
		}
		want := ""
		if i := strings.LastIndex(skey, "/"); i >= 0 {
			want = skey[:i]
		}
		if got := a.StoredChunkDir(c[:len(c)-1]); got != want {
			t.Fatalf("chunk %q: StoredChunkDir(%v) = %q, stored key %q", key, c[:len(c)-1], got, skey)
		}
		if _, ok := a.ParseChunkDir(key); ok {
			t.Fatalf("chunk key %q parses as a directory", key)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	c, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
