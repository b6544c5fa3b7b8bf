package testutil

// Values are an array's known values: its element kind, shape and data in
// C order. The JSON form (shape and data) is what the tests' Python and
// node scripts read and print.
type Values struct {
	Kind  byte      `json:"-"` // numpy kind: 'i', 'u', 'f' or 'b'
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

// ZarritaV3 is what MANIFEST.md §5 says the arrays of
// conformance/zarrita.js/fixtures/v3/data.zarr hold (zarrita.js's
// generate-v3.py wrote them), by path in the store, for every array that can
// be presented raw (the string arrays cannot). Callers must not modify it.
var ZarritaV3 = map[string]Values{
	"1d.contiguous.gzip.i2":                   {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.blosc.i2":                  {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.raw.i2":                    {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.i4":                        {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.u1":                        {'u', []int{4}, []float64{255, 0, 255, 0}},
	"1d.contiguous.f2.le":                     {'f', []int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.le":                     {'f', []int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f4.be":                     {'f', []int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.f8":                        {'f', []int{4}, []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.b1":                        {'b', []int{4}, []float64{1, 0, 1, 0}},
	"1d.chunked.i2":                           {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.chunked.ragged.i2":                    {'i', []int{5}, []float64{1, 2, 3, 4, 5}},
	"2d.contiguous.i2":                        {'i', []int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.i2":                           {'i', []int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.ragged.i2":                    {'i', []int{3, 3}, arange(1, 10)},
	"3d.contiguous.i2":                        {'i', []int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.i2":                           {'i', []int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.mixed.i2.C":                   {'i', []int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.mixed.i2.F":                   {'i', []int{3, 3, 3}, arange(0, 27)},
	"1d.contiguous.compressed.sharded.i2":     {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.i4":     {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.contiguous.compressed.sharded.u1":     {'u', []int{4}, []float64{255, 0, 255, 0}},
	"1d.contiguous.compressed.sharded.f4":     {'f', []int{4}, []float64{-1000.5, 0, 1000.5, 0}},
	"1d.contiguous.compressed.sharded.f8":     {'f', []int{4}, []float64{1.5, 2.5, 3.5, 4.5}},
	"1d.contiguous.compressed.sharded.b1":     {'b', []int{4}, []float64{1, 0, 1, 0}},
	"1d.chunked.compressed.sharded.i2":        {'i', []int{4}, []float64{1, 2, 3, 4}},
	"1d.chunked.filled.compressed.sharded.i2": {'i', []int{4}, []float64{1, 2, 0, 0}},
	"2d.contiguous.compressed.sharded.i2":     {'i', []int{2, 2}, []float64{1, 2, 3, 4}},
	"2d.chunked.compressed.sharded.filled.i2": {'i', []int{4, 4}, arange(0, 16)},
	"2d.chunked.compressed.sharded.i2":        {'i', []int{4, 4}, arange(1, 17)},
	"2d.chunked.ragged.compressed.sharded.i2": {'i', []int{3, 3}, arange(1, 10)},
	"3d.contiguous.compressed.sharded.i2":     {'i', []int{3, 3, 3}, arange(0, 27)},
	"3d.chunked.compressed.sharded.i2":        {'i', []int{4, 4, 4}, arange(0, 64)},
	"3d.chunked.mixed.compressed.sharded.i2":  {'i', []int{3, 3, 3}, arange(0, 27)},
	"1d.contiguous.delta.i4":                  {'i', []int{4}, []float64{1, 2, 3, 4}},
	"3d.contiguous.delta.i4.mixed":            {'i', []int{3, 3, 3}, arange(0, 27)},
	"consolidated/1d.chunked.i2":              {'i', []int{4}, []float64{1, 2, 3, 4}},
	"consolidated/2d.contiguous.i2":           {'i', []int{2, 2}, []float64{1, 2, 3, 4}},
	"consolidated/nested/1d.i2":               {'i', []int{4}, []float64{10, 20, 30, 40}},
}

// arange returns the float64s from, from+1, ..., to-1 (numpy's arange).
func arange(from, to int) []float64 {
	var v []float64
	for i := from; i < to; i++ {
		v = append(v, float64(i))
	}
	return v
}
