package codec

import "testing"

// TestBufClasses: a buffer from GetBuf(n) holds n and is at most a
// quarter larger (or 4 KiB); PutBuf files it under the class GetBuf takes
// it from for every n it holds, and a foreign buffer under a class no
// larger than its capacity.
func TestBufClasses(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 5120, 5121, 8191, 8192, 8193, 1 << 20, 1<<20 + 16, 3<<20 + 1, 1 << 30} {
		i, size := classUp(n)
		if size < n || n > 4096 && 4*size > 5*n+4 {
			t.Errorf("classUp(%d) = class %d of %d bytes: want room for %d, at most a quarter more", n, i, size, n)
		}
		if d := classDown(size); d != i {
			t.Errorf("classDown(%d) = %d, classUp(%d) = %d", size, d, n, i)
		}
		if i > 0 {
			if _, below := classUp(size - 1); below != size {
				// size-1 still needs this class: classes are the sizes.
				t.Errorf("classUp(%d) = %d bytes, classUp(%d) = %d", n, size, size-1, below)
			}
		}
		b := GetBuf(n)
		if cap(*b) < n || len(*b) != 0 {
			t.Errorf("GetBuf(%d): len %d cap %d", n, len(*b), cap(*b))
		}
		PutBuf(b)
	}
	for c := 4096; c < 1<<24; c += 977 {
		i := classDown(c)
		if size := classSize(i); size > c || classSize(i+1) <= c {
			t.Errorf("classDown(%d) = class %d of %d bytes; want the largest class of at most %d (next: %d)", c, i, size, c, classSize(i+1))
		}
	}
	if classDown(4095) != -1 {
		t.Errorf("classDown(4095) = %d, want -1 (dropped)", classDown(4095))
	}
}

// classSize is the size of class i: 4 KiB, then four sizes a power of
// two, 1.25, 1.5, 1.75 and 2 times the power.
func classSize(i int) int {
	if i == 0 {
		return 4096
	}
	e := 12 + (i-1)/4
	return 1<<e + ((i-1)%4+1)<<(e-2)
}
