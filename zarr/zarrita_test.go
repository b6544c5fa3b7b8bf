package zarr

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// The zarrita npm package (zarrita.js) is an independent Zarr v3 reader.
// TestZarritaReadsShardStores has it read the sharding encoder's stores, so
// the encoder (and so the decoder tests built on it) follow the format as
// another implementation reads it. zarrita does not verify the index
// crc32c; the decoder tests check that.
//
// It needs node, and zarrita@0.7.5 where testutil.ZarritaDir finds or
// installs it (make deps does). Without them it skips, and fails instead
// where ZFUSE_TEST_REQUIRE lists deps.

// zarritaScript prints one JSON line per array: its shape and values in C
// order (zarrita may return strided, e.g. F-order, views).
const zarritaScript = `
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";
const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
for (const path of paths) {
  try {
    const arr = await zarr.open.v3(zarr.root(store).resolve(path), { kind: "array" });
    const c = await zarr.get(arr);
    const n = c.shape.reduce((a, b) => a * b, 1);
    const out = [];
    const idx = new Array(c.shape.length).fill(0);
    for (let i = 0; i < n; i++) {
      let off = 0;
      for (let d = 0; d < idx.length; d++) off += idx[d] * c.stride[d];
      const v = c.data[off];
      out.push(typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? (v ? 1 : 0) : v);
      for (let d = idx.length - 1; d >= 0; d--) { if (++idx[d] < c.shape[d]) break; idx[d] = 0; }
    }
    console.log(JSON.stringify({ path, shape: c.shape, data: out }));
  } catch (e) {
    console.log(JSON.stringify({ path, error: String(e) }));
  }
}
`

type zarritaResult struct {
	Path  string    `json:"path"`
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
	Error string    `json:"error"`
}

// zarritaRead reads the arrays at paths under root with zarrita.
func zarritaRead(t *testing.T, root string, paths []string) map[string]zarritaResult {
	out := testutil.Node(t, "zfuse-read.mjs", []byte(zarritaScript), append([]string{root}, paths...)...)
	res := map[string]zarritaResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r zarritaResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("zarrita output %q: %v", sc.Text(), err)
		}
		res[r.Path] = r
	}
	return res
}

// zarritaVariant returns the part of a test store that zarrita 0.7.5 can
// read, or false. Its sharding reader always reads the index as a suffix,
// ignores codecs before and after sharding_indexed, and knows no nested
// sharding or 0-d shards; the decoder's tests cover those on the full stores.
// The transpose convention is checked on an unsharded store instead.
func zarritaVariant(s shardStore) (shardStore, bool) {
	if len(s.shape) == 0 {
		return s, false
	}
	if s.unsharded {
		return s, true
	}
	s.name += ".zarrita"
	if s.transpose != nil { // the inner chunk shape, back in array axes
		inner := make([]int, len(s.level.inner))
		for i, o := range s.transpose {
			inner[o] = s.level.inner[i]
		}
		s.level.inner = inner
	}
	s.transpose, s.outerCRC = nil, false
	s.level.start, s.level.nested = false, nil
	return s, true
}

func TestZarritaReadsShardStores(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var stores []shardStore
	want := map[string][]byte{}
	for _, s := range shardStores {
		v, ok := zarritaVariant(s)
		if !ok {
			continue
		}
		want[v.name] = v.write(t, dir)
		if got := readV3(t, filepath.Join(dir, v.name), openStore(t, dir, v.name)); !bytes.Equal(got, want[v.name]) {
			t.Errorf("%s: zfuse decodes %v, want %v", v.name, got, want[v.name])
		}
		paths = append(paths, v.name)
		stores = append(stores, v)
	}
	got := zarritaRead(t, dir, paths)
	for _, s := range stores {
		r, ok := got[s.name]
		switch {
		case !ok:
			t.Errorf("%s: zarrita printed nothing", s.name)
			continue
		case r.Error != "":
			t.Errorf("%s: zarrita: %s", s.name, r.Error)
			continue
		}
		vals := want[s.name]
		typ := s.itemType()
		var exp []float64
		for i := 0; i < len(vals); i += typ.Size {
			switch typ.Kind {
			case 'f':
				exp = append(exp, typ.Float(vals[i:]))
			case 'u':
				exp = append(exp, float64(typ.Uint(vals[i:])))
			default:
				exp = append(exp, float64(typ.Int(vals[i:])))
			}
		}
		if len(r.Shape) != len(s.shape) || len(r.Data) != len(exp) {
			t.Errorf("%s: zarrita shape %v, %d values; want %v, %d", s.name, r.Shape, len(r.Data), s.shape, len(exp))
			continue
		}
		for i := range exp {
			if r.Data[i] != exp[i] && !(math.IsNaN(r.Data[i]) && math.IsNaN(exp[i])) {
				t.Errorf("%s: zarrita reads %v\nthe encoder wrote %v", s.name, r.Data, exp)
				break
			}
		}
	}
}
