package codec

import "encoding/binary"

// Byte and bit unshuffle, the filters c-blosc applies per block (and the
// numcodecs "shuffle" filter applies to a whole chunk). The exact rules are
// in zarr-formats.md §1.5; this file holds the portable reference code, and
// shuffle_amd64.go / shuffle_other.go pick the fast path.
//
// All functions here are pure: they read src, write dst, keep nothing.

// maxStreams is the most byte streams a Blosc block is split into
// (MAX_SPLITS in blosc.c), and the widest typesize with a fast kernel.
const maxStreams = 16

// byteUnshuffle undoes c-blosc's byte shuffle of src into dst:
// with n = len(src)/typesize elements, dst[i*typesize+j] = src[j*n+i], and
// the len(src)-n*typesize tail bytes are copied verbatim. len(dst) must equal
// len(src); dst and src must not overlap. typesize <= 1 is a plain copy.
func byteUnshuffle(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: byteUnshuffle: len(dst) != len(src)")
	}
	if typesize <= 1 || len(src) < 2*typesize {
		byteUnshuffleGeneric(dst, src, typesize)
		return
	}
	n := len(src) / typesize
	if typesize <= maxStreams {
		var s [maxStreams][]byte
		for j := range typesize {
			s[j] = src[j*n : j*n+n]
		}
		unshuffleStreams(dst[:n*typesize], &s, typesize, n)
	} else {
		unshuffleContiguousGeneric(dst[:n*typesize], src[:n*typesize], typesize, n)
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// byteUnshuffleGeneric is the reference byteUnshuffle, written for clarity.
func byteUnshuffleGeneric(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: byteUnshuffleGeneric: len(dst) != len(src)")
	}
	if typesize <= 1 {
		copy(dst, src)
		return
	}
	n := len(src) / typesize
	for j := range typesize {
		for i, b := range src[j*n : j*n+n] {
			dst[i*typesize+j] = b
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// unshuffleContiguousGeneric interleaves typesize streams of n bytes that lie
// back to back in src into dst (both n*typesize long).
func unshuffleContiguousGeneric(dst, src []byte, typesize, n int) {
	for j := range typesize {
		d := dst[j:]
		for i, b := range src[j*n : j*n+n] {
			d[i*typesize] = b
		}
	}
}

// unshuffleStreamsGeneric writes elements [from, n) of the interleaving of
// streams s[0..typesize) into dst: dst[i*typesize+j] = s[j][i]. Each stream
// holds at least n bytes and len(dst) >= n*typesize.
func unshuffleStreamsGeneric(dst []byte, s *[maxStreams][]byte, typesize, from, n int) {
	if from >= n {
		return
	}
	dst = dst[:n*typesize]
	for j := range typesize {
		src := s[j][from:n]
		d := dst[from*typesize+j:]
		for i, b := range src {
			d[i*typesize] = b
		}
	}
}

// bitUnshuffle undoes c-blosc 1.x's bitshuffle of one block src into dst
// (len(dst) == len(src), no overlap). With n = len(src)/typesize elements:
// if n%8 != 0 the block was not bit-shuffled and is copied verbatim;
// otherwise the first n*typesize bytes are 8*typesize bit planes of n/8
// bytes, plane 8*j+k holding bit k of byte j of every element (element i is
// bit i%8 of byte i/8), and the tail bytes are copied verbatim.
func bitUnshuffle(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: bitUnshuffle: len(dst) != len(src)")
	}
	if typesize < 1 {
		typesize = 1
	}
	n := len(src) / typesize
	if n%8 != 0 || n == 0 {
		copy(dst, src)
		return
	}
	bitUnshufflePlanes(dst[:n*typesize], src[:n*typesize], typesize, n/8)
	copy(dst[n*typesize:], src[n*typesize:])
}

// bitUnshuffleGeneric is the reference bitUnshuffle: one bit at a time,
// straight from the definition.
func bitUnshuffleGeneric(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: bitUnshuffleGeneric: len(dst) != len(src)")
	}
	if typesize < 1 {
		typesize = 1
	}
	n := len(src) / typesize
	if n%8 != 0 {
		copy(dst, src)
		return
	}
	nb := n / 8
	for i := range n {
		for j := range typesize {
			var v byte
			for k := range 8 {
				p := 8*j + k
				v |= (src[p*nb+i/8] >> (i % 8) & 1) << k
			}
			dst[i*typesize+j] = v
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// bitUnshufflePlanesGeneric does the bit-plane transpose with 8x8 bit-matrix
// transposes on uint64s: for byte j of elements 8*q..8*q+7, the eight plane
// bytes src[(8j+k)*nb+q] (k = 0..7) form a matrix whose transpose is the
// eight output bytes.
func bitUnshufflePlanesGeneric(dst, src []byte, typesize, nb int) {
	dst = dst[:8*nb*typesize]
	src = src[:8*nb*typesize]
	for j := range typesize {
		planes := src[8*j*nb : 8*(j+1)*nb]
		for q := range nb {
			x := uint64(planes[q]) |
				uint64(planes[nb+q])<<8 |
				uint64(planes[2*nb+q])<<16 |
				uint64(planes[3*nb+q])<<24 |
				uint64(planes[4*nb+q])<<32 |
				uint64(planes[5*nb+q])<<40 |
				uint64(planes[6*nb+q])<<48 |
				uint64(planes[7*nb+q])<<56
			x = transpose8x8(x)
			if typesize == 1 {
				binary.LittleEndian.PutUint64(dst[8*q:], x)
				continue
			}
			d := dst[8*q*typesize+j : 8*q*typesize+j+7*typesize+1]
			for e := range 8 {
				d[e*typesize] = byte(x >> (8 * e))
			}
		}
	}
}

// bitUnshufflePlanes is bitUnshufflePlanesGeneric rearranged for speed,
// the way the bitshuffle library splits it: for a run of elements, each
// byte position j gets its own stream (the eight planes of j interleaved
// byte-wise by the unshuffle kernel, then each uint64 bit-transposed), and
// the streams are byte-unshuffled into dst. The runs are sized to keep the
// streams in L1.
func bitUnshufflePlanes(dst, src []byte, typesize, nb int) {
	n := 8 * nb
	dst = dst[:n*typesize]
	src = src[:n*typesize]
	if typesize == 1 {
		bitTransposeRows(dst, src, 0, nb, 0, nb)
		return
	}
	var buf [16 << 10]byte
	chunk := len(buf) / typesize &^ 127 // elements per run: whole SIMD groups
	if chunk == 0 {
		chunk = len(buf) / typesize &^ 7
	}
	var streams [maxStreams][]byte
	for i0 := 0; i0 < n; i0 += chunk {
		c := min(chunk, n-i0)
		for j := range typesize {
			bitTransposeRows(buf[j*c:(j+1)*c], src, 8*j, nb, i0/8, c/8)
			if j < maxStreams {
				streams[j] = buf[j*c : (j+1)*c]
			}
		}
		out := dst[i0*typesize : (i0+c)*typesize]
		if typesize <= maxStreams {
			unshuffleStreams(out, &streams, typesize, c)
		} else {
			unshuffleContiguousGeneric(out, buf[:c*typesize], typesize, c)
		}
	}
}

// bitTransposeRows sets t[8*i+e] (i < qn, e < 8) to the byte whose bit k is
// bit e of src[(row0+k)*nb+q0+i]: it undoes the bitshuffle of one byte
// position for 8*qn elements.
func bitTransposeRows(t, src []byte, row0, nb, q0, qn int) {
	var rows [maxStreams][]byte
	for k := range 8 {
		off := (row0+k)*nb + q0
		rows[k] = src[off : off+qn]
	}
	bitTransposeStreams(t[:8*qn], &rows, qn)
}

// bitTransposeStreamsGeneric does bitTransposeRows from the eight row
// streams rows[0..8), for i in [from, qn).
func bitTransposeStreamsGeneric(t []byte, rows *[maxStreams][]byte, from, qn int) {
	unshuffleStreamsGeneric(t, rows, 8, from, qn) // t[8i+k] = row k, byte i
	transposeBits(t[8*from : 8*qn])
}

// transposeBits applies transpose8x8 to each little-endian uint64 of b
// (len(b) a multiple of 8).
func transposeBits(b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, transpose8x8(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
}

// transpose8x8 transposes the 8x8 bit matrix whose bit 8*r+c is element
// (r, c) (Hacker's Delight, transpose8, LSB-first).
func transpose8x8(x uint64) uint64 {
	t := (x ^ x>>7) & 0x00AA00AA00AA00AA
	x ^= t ^ t<<7
	t = (x ^ x>>14) & 0x0000CCCC0000CCCC
	x ^= t ^ t<<14
	t = (x ^ x>>28) & 0x00000000F0F0F0F0
	x ^= t ^ t<<28
	return x
}
