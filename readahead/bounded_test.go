package readahead

import (
	"testing"
)

// TestLoaderArraysBounded: under zfuse --refresh every metadata read is a
// new *zarr.Array for the same path, with the same shape or a new one.
// Reading thousands of them, each out of any grid pattern (so that its
// name order is computed), keeps the Loader's per-array tables bounded;
// arrays of one grid share one name order.
func TestLoaderArraysBounded(t *testing.T) {
	const (
		cycles = 3000
		base   = 16  // chunks of the same shape
		shapes = 400 // distinct new shapes, more than maxOrders
	)
	largest := zlibArray(t, []int{(base + shapes) * 64}, []int{64})
	l := newLoader(t, fixture(t, largest, "x", nil), nil)
	reads := []int64{5, 0, 3, 1, 4, 2} // no pattern in grid order
	readAll := func(n int) {
		a := zlibArray(t, []int{n * 64}, []int{64})
		for _, i := range reads {
			if err := readChunk(t, l, a, "x", i, 1); err != nil {
				t.Fatalf("chunk %d of %d: %v", i, n, err)
			}
		}
	}
	most := 0
	for c := range cycles {
		n := base // the same shape, every other cycle
		if c%2 == 1 {
			n = base + 1 + c/2%shapes // a new shape
		}
		readAll(n)
		d, o, b, _ := l.arrayTables()
		if d > maxRoutes || o > maxOrders || b > maxOrderBytes {
			t.Fatalf("after %d arrays: decoders of %d arrays, %d name orders (%d bytes); want at most %d, %d (%d)",
				c+1, d, o, b, maxRoutes, maxOrders, maxOrderBytes)
		}
		most = max(most, o)
	}
	if most < maxOrders/2 {
		t.Errorf("at most %d name orders kept over %d shapes: were they computed?", most, shapes)
	}

	// Arrays of one grid: one name order, whichever array computed it.
	readAll(base)
	_, _, _, before := l.arrayTables()
	for range 500 {
		readAll(base)
	}
	if _, _, _, after := l.arrayTables(); after != before {
		t.Errorf("500 arrays of one grid: %d name orders computed for them; want 0", after-before)
	}
	if st := l.Stats(); st.Reads != int64((cycles+501)*len(reads)) {
		t.Errorf("Reads = %d, want %d", st.Reads, (cycles+501)*len(reads))
	}
}
