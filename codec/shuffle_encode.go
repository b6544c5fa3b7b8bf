package codec

import "encoding/binary"

// Byte and bit shuffle, the filters c-blosc applies to each block before
// compressing it (and the numcodecs "shuffle" filter to a whole chunk):
// the inverses of byteUnshuffle and bitUnshuffle (zarr-formats.md §1.5).
// They read src, write dst (same length, no overlap), keep nothing.

// byteShuffle writes c-blosc's byte shuffle of src into dst: with n =
// len(src)/typesize elements, dst[j*n+i] = src[i*typesize+j], and the tail
// bytes are copied verbatim. typesize <= 1 is a plain copy.
func byteShuffle(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: byteShuffle: len(dst) != len(src)")
	}
	n := 0
	if typesize > 1 {
		n = len(src) / typesize
	}
	var streams [maxStreams][]byte
	if n > 0 && typesize <= maxStreams {
		for j := range typesize {
			streams[j] = dst[j*n : j*n+n]
		}
	}
	switch {
	case n == 0:
	case typesize <= maxStreams && shuffleStreams(&streams, src, typesize, n):
	case typesize == 4:
		shuffle4(dst[:4*n], src[:4*n], n)
	case typesize == 8:
		shuffle8(dst[:8*n], src[:8*n], n)
	default:
		for j := range typesize {
			d := dst[j*n : j*n+n]
			for i := range d {
				d[i] = src[i*typesize+j]
			}
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// shuffle4 is byteShuffle for 4-byte elements, eight elements at a time.
func shuffle4(dst, src []byte, n int) {
	p0, p1, p2, p3 := dst[:n], dst[n:2*n], dst[2*n:3*n], dst[3*n:4*n]
	i := 0
	for ; i+8 <= n; i += 8 {
		s := src[4*i : 4*i+32]
		a, b := binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[8:])
		c, d := binary.LittleEndian.Uint64(s[16:]), binary.LittleEndian.Uint64(s[24:])
		for k, p := range [4][]byte{p0, p1, p2, p3} {
			sh := uint(8 * k)
			v := (a>>sh)&0xFF | (a>>(sh+32)&0xFF)<<8 |
				(b>>sh&0xFF)<<16 | (b>>(sh+32)&0xFF)<<24 |
				(c>>sh&0xFF)<<32 | (c>>(sh+32)&0xFF)<<40 |
				(d>>sh&0xFF)<<48 | (d>>(sh+32)&0xFF)<<56
			binary.LittleEndian.PutUint64(p[i:], v)
		}
	}
	for ; i < n; i++ {
		p0[i], p1[i], p2[i], p3[i] = src[4*i], src[4*i+1], src[4*i+2], src[4*i+3]
	}
}

// shuffle8 is byteShuffle for 8-byte elements: each group of eight
// elements is an 8x8 byte matrix to transpose.
func shuffle8(dst, src []byte, n int) {
	i := 0
	for ; i+8 <= n; i += 8 {
		var m [8]uint64
		for e := range 8 {
			m[e] = binary.LittleEndian.Uint64(src[8*(i+e):])
		}
		for k := range 8 {
			sh := uint(8 * k)
			v := m[0]>>sh&0xFF | (m[1]>>sh&0xFF)<<8 | (m[2]>>sh&0xFF)<<16 | (m[3]>>sh&0xFF)<<24 |
				(m[4]>>sh&0xFF)<<32 | (m[5]>>sh&0xFF)<<40 | (m[6]>>sh&0xFF)<<48 | (m[7]>>sh&0xFF)<<56
			binary.LittleEndian.PutUint64(dst[k*n+i:], v)
		}
	}
	for ; i < n; i++ {
		for k := range 8 {
			dst[k*n+i] = src[8*i+k]
		}
	}
}

// bitShuffle writes c-blosc 1.x's bitshuffle of one block src into dst:
// with n = len(src)/typesize elements, if n%8 != 0 the block is copied
// verbatim; otherwise bit k of byte j of element i goes to bit i%8 of
// byte i/8 of plane 8*j+k (planes of n/8 bytes), and the tail bytes are
// copied verbatim. It byte-shuffles first (the SSE2 kernels), then
// transposes each byte position's 8x8 bit matrices, the decoder's steps
// backwards.
func bitShuffle(dst, src []byte, typesize int) {
	if len(dst) != len(src) {
		panic("codec: bitShuffle: len(dst) != len(src)")
	}
	typesize = max(typesize, 1)
	n := len(src) / typesize
	if n%8 != 0 || n == 0 {
		copy(dst, src)
		return
	}
	nb := n / 8
	planes := src[:n*typesize]
	if typesize > 1 {
		p := GetBuf(n * typesize)
		defer PutBuf(p)
		planes = (*p)[:n*typesize]
		byteShuffle(planes, src[:n*typesize], typesize)
	}
	for j := range typesize {
		in := planes[j*n : (j+1)*n] // byte j of every element
		out := dst[8*j*nb : 8*(j+1)*nb]
		for q := range nb {
			x := transpose8x8(binary.LittleEndian.Uint64(in[8*q:]))
			for k := range 8 {
				out[k*nb+q] = byte(x >> (8 * k))
			}
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}
