//go:build amd64 && !purego

package codec

import "unsafe"

// SSE2 (the amd64 baseline, so no CPU check) kernels for the typesizes that
// matter: 2, 4, 8 and 16 (int16/float16, int32/float32, int64/float64,
// complex128). Each kernel interleaves whole groups of 16 elements; the Go
// code bounds-checks every stream first and finishes the remainder with the
// portable loop. Other typesizes use the portable loop throughout, as
// c-blosc does. (An AVX2 typesize-4 kernel measured no faster: at ~45 GB/s
// the unshuffle is bound by the cache, not the shuffle units.)

// Each kernel reads n bytes from each of the first typesize pointers in p
// and writes n*typesize bytes at dst. n > 0 is a multiple of 16.
//
//go:noescape
func unshuffle2SSE2(dst *byte, p *[maxStreams]*byte, n int)

//go:noescape
func unshuffle4SSE2(dst *byte, p *[maxStreams]*byte, n int)

//go:noescape
func unshuffle8SSE2(dst *byte, p *[maxStreams]*byte, n int)

//go:noescape
func bitTranspose8SSE2(dst *byte, p *[maxStreams]*byte, n int)

//go:noescape
func unshuffle16HalfSSE2(dst *byte, p *[maxStreams]*byte, n int)

// unshuffleStreams writes dst[i*typesize+j] = s[j][i] for i < n, j <
// typesize. Each s[j] holds at least n bytes; len(dst) >= n*typesize.
func unshuffleStreams(dst []byte, s *[maxStreams][]byte, typesize, n int) {
	switch typesize {
	case 2, 4, 8, 16:
	default:
		unshuffleStreamsGeneric(dst, s, typesize, 0, n)
		return
	}
	m := n &^ 15
	if m > 0 {
		_ = dst[m*typesize-1] // the kernels write dst[:m*typesize]
		var p [maxStreams]*byte
		for j := range typesize {
			p[j] = &s[j][:m][0] // panics unless the stream holds m bytes
		}
		switch typesize {
		case 2:
			unshuffle2SSE2(&dst[0], &p, m)
		case 4:
			unshuffle4SSE2(&dst[0], &p, m)
		case 8:
			unshuffle8SSE2(&dst[0], &p, m)
		case 16:
			unshuffle16(dst, &p, m)
		}
	}
	unshuffleStreamsGeneric(dst, s, typesize, m, n)
}

// unshuffle16 runs the two half kernels over runs of 1024 elements, so
// that the 16 KiB of dst a run writes stays in L1 between the halves.
func unshuffle16(dst []byte, p *[maxStreams]*byte, m int) {
	const run = 1024
	var lo, hi [maxStreams]*byte
	for i := 0; i < m; i += run {
		c := min(run, m-i)
		for k := range 8 {
			lo[k] = (*byte)(unsafe.Add(unsafe.Pointer(p[k]), i))
			hi[k] = (*byte)(unsafe.Add(unsafe.Pointer(p[8+k]), i))
		}
		unshuffle16HalfSSE2(&dst[16*i], &lo, c)
		unshuffle16HalfSSE2(&dst[16*i+8], &hi, c)
	}
}

// bitTransposeStreams interleaves the eight row streams rows[0..8) (qn bytes
// each) into t and bit-transposes every uint64 of the result: t[8i+e] gets
// bit e of rows[k][i] as its bit k. One SSE2 pass for whole groups of 16.
func bitTransposeStreams(t []byte, rows *[maxStreams][]byte, qn int) {
	m := qn &^ 15
	if m > 0 {
		_ = t[8*m-1]
		var p [maxStreams]*byte
		for k := range 8 {
			p[k] = &rows[k][:m][0]
		}
		bitTranspose8SSE2(&t[0], &p, m)
	}
	bitTransposeStreamsGeneric(t, rows, m, qn)
}
