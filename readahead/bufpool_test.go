package readahead

import "testing"

func TestSizeClass(t *testing.T) {
	for _, tt := range []struct{ n, want int }{
		{0, 4 << 10}, {1, 4 << 10}, {4 << 10, 4 << 10}, {4<<10 + 1, 6 << 10}, {6 << 10, 6 << 10},
		{6<<10 + 1, 8 << 10}, {8 << 10, 8 << 10}, {600 << 10, 768 << 10}, {768<<10 + 1, 1 << 20},
		{1 << 20, 1 << 20}, {1<<20 + 1, 3 << 19},
	} {
		if got := sizeClass(tt.n); got != tt.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if c := sizeClass(tt.n); sizeClass(c) != c || c < tt.n || c > tt.n*3/2+(4<<10) {
			t.Errorf("sizeClass(%d) = %d: not a fixed point, too small or more than half again", tt.n, c)
		}
	}
}

// TestBufPool: a buffer given back is handed out again for the same class,
// not beyond the pool's bound, and buffers of no class are not kept.
func TestBufPool(t *testing.T) {
	p := newBufPool(2*(768<<10), sizeClass)
	a := p.get(600 << 10)
	if len(a) != 600<<10 || cap(a) != 768<<10 {
		t.Fatalf("get(600 KiB): len %d cap %d", len(a), cap(a))
	}
	p.put(a)
	b := p.get(700 << 10) // same class
	if &b[0] != &a[0] || len(b) != 700<<10 || p.reuses() != 1 {
		t.Errorf("the buffer given back was not used again (reuses %d)", p.reuses())
	}
	p.put(make([]byte, 1000))       // no class: dropped
	p.put(make([]byte, 0, 768<<10)) // kept
	p.put(make([]byte, 0, 768<<10)) // kept: the pool is full now
	p.put(make([]byte, 0, 768<<10)) // dropped
	if p.bytes != 2*(768<<10) || len(p.free[1000]) != 0 {
		t.Errorf("pool holds %d bytes, %d of no class; want %d, 0", p.bytes, len(p.free[1000]), 2*(768<<10))
	}
	exact := newBufPool(1<<20, nil)
	if c := exact.get(972000); cap(c) != 972000 {
		t.Errorf("an exact pool gave cap %d for 972000 bytes", cap(c))
	}
}
