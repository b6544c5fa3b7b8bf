//go:build amd64 && !purego

package codec

// SSE2 (the amd64 baseline, so no CPU check) kernels for the typesizes that
// matter: 2, 4, 8 and 16 (int16/float16, int32/float32, int64/float64,
// complex128). Each kernel interleaves whole groups of 16 (typesize 16: 8)
// elements; the Go code bounds-checks every stream first and finishes the
// remainder with the portable loop. Other typesizes use the portable loop
// throughout, as c-blosc does.

// Each kernel reads n bytes from each of the first typesize pointers in p
// and writes n*typesize bytes at dst. n > 0 is a multiple of 16 (8 for
// unshuffle16SSE2).
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
func unshuffle16SSE2(dst *byte, p *[maxStreams]*byte, n int)

// unshuffleStreams writes dst[i*typesize+j] = s[j][i] for i < n, j <
// typesize. Each s[j] holds at least n bytes; len(dst) >= n*typesize.
func unshuffleStreams(dst []byte, s *[maxStreams][]byte, typesize, n int) {
	group := 16
	switch typesize {
	case 2, 4, 8:
	case 16:
		group = 8
	default:
		unshuffleStreamsGeneric(dst, s, typesize, 0, n)
		return
	}
	m := n &^ (group - 1)
	if m > 0 {
		_ = dst[m*typesize-1] // the kernel writes dst[:m*typesize]
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
			unshuffle16SSE2(&dst[0], &p, m)
		}
	}
	unshuffleStreamsGeneric(dst, s, typesize, m, n)
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
