package compress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zfuse/zfuse/zarr"
)

// encodedArray is the encoding zfuse compress plans for an int16 array of
// shape in chunks, sharded with shard chunks per shard when not nil.
func encodedArray(t testing.TB, shape, chunks, shard []int) *zarr.Array {
	t.Helper()
	js := func(v []int) string { b, _ := json.Marshal(v); return string(b) }
	src := map[string][]byte{zarr.ArrayFile: fmt.Appendf(nil, `{"zarr_format":2,"shape":%s,"chunks":%s,"dtype":"<i2","compressor":null,"filters":null,"fill_value":0,"order":"C"}`, js(shape), js(chunks))}
	a, err := zarr.ParseV2(src[zarr.ArrayFile])
	if err != nil {
		t.Fatal(err)
	}
	tg := zarr.Target{Format: 2, Chunks: chunks}
	if shard != nil {
		tg = zarr.Target{Format: 3, Chunks: chunks, Shard: shard}
	}
	files, err := zarr.StoreArray(src, a, tg)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zarr.NewEncoding(files)
	if err != nil {
		t.Fatal(err)
	}
	return enc.Array()
}

// TestWeight: the O(rank) weight of each object and of the objects before
// it equal a count of the chunks inside the array, object by object.
func TestWeight(t *testing.T) {
	for _, tc := range []struct{ shape, chunks, shard []int }{
		{[]int{10, 9}, []int{3, 4}, nil},
		{[]int{10, 9}, []int{3, 4}, []int{2, 2}},
		{[]int{7, 5, 11}, []int{2, 2, 3}, []int{3, 1, 2}},
		{[]int{100}, []int{7}, []int{4}},
		{[]int{}, []int{}, nil},
	} {
		d := encodedArray(t, tc.shape, tc.chunks, tc.shard)
		var sum int64
		for j := range objects(d) {
			n := int64(1)
			if d.Shard() != nil {
				s := zarr.Unravel(j, d.StoredGrid())
				n = 0
				for k := range d.Shard().InnerChunks() {
					if _, ok := d.InnerCoords(s, k); ok {
						n++
					}
				}
			}
			w, before := weight(d, j)
			if w != n*d.ChunkLen() || before != sum {
				t.Errorf("%v in %v, shards %v: object %d weighs %d after %d, want %d after %d", tc.shape, tc.chunks, tc.shard, j, w, before, n*d.ChunkLen(), sum)
			}
			sum += n * d.ChunkLen()
		}
		if sum != d.NumChunks()*d.ChunkLen() {
			t.Errorf("%v: objects weigh %d, the chunks %d", tc.shape, sum, d.NumChunks()*d.ChunkLen())
		}
	}
}

// TestSplit: over many jobs (one to five arrays of rank 0 to 4, random
// shapes and chunks, sharded or not) and part counts, the shares cover
// every object of every array exactly once, each part's objects in an
// array are a run, and each part's bytes are within one object of a Nth
// of the job's; with ten or more objects' worth per part, within 10%.
func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	checked10 := 0
	for job := range 300 {
		var arrays []*zarr.Array
		var desc []string
		for range 1 + r.IntN(5) {
			rank := r.IntN(5)
			shape, chunks := make([]int, rank), make([]int, rank)
			var shard []int
			if r.IntN(2) == 0 && rank > 0 {
				shard = make([]int, rank)
			}
			for ax := range rank {
				shape[ax] = 1 + r.IntN([]int{2000, 60, 25, 12}[rank-1])
				chunks[ax] = 1 + r.IntN(max(shape[ax]/(1+r.IntN(8)), 1))
				if shard != nil {
					shard[ax] = 1 + r.IntN(4)
				}
			}
			arrays = append(arrays, encodedArray(t, shape, chunks, shard))
			desc = append(desc, fmt.Sprintf("%v/%v/%v", shape, chunks, shard))
		}
		if job%7 == 3 {
			arrays = append(arrays, nil) // copied as stored: no share
		}
		var total, heaviest int64
		for _, d := range arrays {
			if d == nil {
				continue
			}
			for j := range objects(d) {
				w, _ := weight(d, j)
				total += w
				heaviest = max(heaviest, w)
			}
		}
		for _, n := range []int{1, 2, 3, 4, 7, 16, 64} {
			shares := split(arrays, n)
			got := make([]int64, n)
			for i, d := range arrays {
				if d == nil {
					for k := range n {
						if shares[i][k] != (share{}) {
							t.Fatalf("job %d: an array copied as stored has a share %v", job, shares[i][k])
						}
					}
					continue
				}
				// Runs in order, back to back, from 0 to the last object.
				next := int64(0)
				for k, s := range shares[i] {
					if s.lo != next || s.hi < s.lo {
						t.Fatalf("job %d (%v), n %d: array %d part %d has %v after %d", job, desc, n, i, k, s, next)
					}
					next = s.hi
					for j := s.lo; j < s.hi; j++ {
						w, _ := weight(d, j)
						got[k] += w
					}
				}
				if next != objects(d) {
					t.Fatalf("job %d, n %d: array %d: shares end at %d of %d objects", job, n, i, next, objects(d))
				}
			}
			want := float64(total) / float64(n)
			for k, b := range got {
				if d := float64(b) - want; d > float64(heaviest) || -d > float64(heaviest) {
					t.Errorf("job %d (%v), n %d: part %d has %d bytes, want %.0f within one object (%d)", job, desc, n, k, b, want, heaviest)
				}
				if 10*float64(heaviest) <= want {
					checked10++
					if d := float64(b)/want - 1; d > 0.1 || d < -0.1 {
						t.Errorf("job %d (%v), n %d: part %d has %d bytes, %.1f%% off a Nth", job, desc, n, k, b, 100*d)
					}
				}
			}
		}
	}
	if checked10 < 1000 {
		t.Errorf("only %d parts had ten objects' worth of bytes: the jobs are too small to test the 10%% bound", checked10)
	}
	t.Logf("%d parts checked within 10%%", checked10)
}

// TestParsePart: K/N with 0 <= K < N.
func TestParsePart(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"0/1", true}, {"3/4", true}, {"4/4", false}, {"-1/4", false}, {"1/0", false}, {"1", false}, {"a/b", false}, {"1/2/3", false}} {
		p, err := ParsePart(tc.in)
		if (err == nil) != tc.ok || (tc.ok && p.String() != tc.in) {
			t.Errorf("ParsePart(%q) = %v, %v", tc.in, p, err)
		}
	}
}

// FuzzParsePart: what parsePart accepts is a part with 0 <= K < N, and
// the name of its record parses back to it.
func FuzzParsePart(f *testing.F) {
	for _, s := range []string{"0/1", "3/4", "4/4", "-1/2", "1/0", "01/2", "1/2/3", "+1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePart(s)
		if err != nil {
			return
		}
		if p.K < 0 || p.K >= p.N {
			t.Fatalf("ParsePart(%q) = %v", s, p)
		}
		if q, ok := parsePartFile(partFile(p)); !ok || q != p {
			t.Fatalf("parsePartFile(%q) = %v, %v", partFile(p), q, ok)
		}
	})
}
