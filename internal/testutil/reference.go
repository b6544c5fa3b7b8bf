package testutil

// Reference encoders, written from the definitions in zarr-formats.md and
// independently of the decoders they check: tests in several packages build
// their encoded fixtures with them.

// ByteShuffle is c-blosc's forward byte shuffle (shuffle_generic) of src
// with element size ts: byte j of element i moves to j*n+i, n = len(src)/ts;
// the len(src)%ts tail bytes stay in place.
func ByteShuffle(src []byte, ts int) []byte {
	dst := make([]byte, len(src))
	if ts <= 1 {
		copy(dst, src)
		return dst
	}
	n := len(src) / ts
	for i := range n {
		for j := range ts {
			dst[j*n+i] = src[i*ts+j]
		}
	}
	copy(dst[n*ts:], src[n*ts:])
	return dst
}

// BitShuffle is c-blosc 1.x's forward bitshuffle of one block: bit k of
// byte j of element i moves to bit i of the bit plane 8j+k. A block whose
// element count is not a multiple of 8 is left as it is, and so are the
// tail bytes.
func BitShuffle(src []byte, ts int) []byte {
	dst := make([]byte, len(src))
	n := len(src) / ts
	if n%8 != 0 {
		copy(dst, src)
		return dst
	}
	nb := n / 8
	for i := range n {
		for j := range ts {
			for k := range 8 {
				if src[i*ts+j]>>k&1 == 1 {
					dst[(8*j+k)*nb+i/8] |= 1 << (i % 8)
				}
			}
		}
	}
	copy(dst[n*ts:], src[n*ts:])
	return dst
}

// Transpose is the Zarr v3 transpose codec's encode: a, a C-order array of
// shape with elements of itemSize bytes, becomes B with B[b] = A[a],
// b[i] = a[order[i]], so B.shape[i] = shape[order[i]], in C order.
func Transpose(a []byte, shape, order []int, itemSize int) []byte {
	bshape := make([]int, len(order))
	for i, o := range order {
		bshape[i] = shape[o]
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]byte, 0, len(a))
	b := make([]int, len(order))
	for range n {
		aidx := make([]int, len(shape))
		for i, o := range order {
			aidx[o] = b[i]
		}
		lin := 0
		for d := range shape {
			lin = lin*shape[d] + aidx[d]
		}
		out = append(out, a[lin*itemSize:(lin+1)*itemSize]...)
		for i := len(b) - 1; i >= 0; i-- {
			if b[i]++; b[i] < bshape[i] {
				break
			}
			b[i] = 0
		}
	}
	return out
}
