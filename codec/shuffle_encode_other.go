//go:build !amd64 || purego

package codec

// Without a SIMD kernel, byteShuffle's portable loops are the fast path.
func shuffleStreams(s *[maxStreams][]byte, src []byte, typesize, n int) bool { return false }
