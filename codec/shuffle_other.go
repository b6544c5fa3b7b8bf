//go:build !amd64 || purego

package codec

// Without a SIMD kernel, the portable code is the fast path.

func unshuffleStreams(dst []byte, s *[maxStreams][]byte, typesize, n int) {
	unshuffleStreamsGeneric(dst, s, typesize, 0, n)
}

func bitTransposeStreams(t []byte, rows *[maxStreams][]byte, qn int) {
	bitTransposeStreamsGeneric(t, rows, 0, qn)
}
