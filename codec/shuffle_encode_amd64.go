//go:build amd64 && !purego

package codec

// SSE2 byte-shuffle kernels for 4- and 8-byte elements (float32/int32,
// float64/int64), the sizes whose shuffle dominates encoding time; other
// sizes use the portable loop, as for unshuffle.

// Each kernel writes n bytes to each of the first typesize pointers in p,
// reading n*typesize bytes at src. n > 0 is a multiple of 16.
//
//go:noescape
func shuffle4SSE2(p *[maxStreams]*byte, src *byte, n int)

//go:noescape
func shuffle8SSE2(p *[maxStreams]*byte, src *byte, n int)

// shuffleStreams writes s[j][i] = src[i*typesize+j] for i < n, j <
// typesize, for typesize 4 and 8; it reports false for other sizes. It is
// unshuffleStreams (shuffle_amd64.go) run the other way: the same bounds
// checks before the kernels, the same generic tail after.
func shuffleStreams(s *[maxStreams][]byte, src []byte, typesize, n int) bool {
	if typesize != 4 && typesize != 8 {
		return false
	}
	m := n &^ 15
	if m > 0 {
		_ = src[m*typesize-1] // the kernels read src[:m*typesize]
		var p [maxStreams]*byte
		for j := range typesize {
			p[j] = &s[j][:m][0] // panics unless the stream holds m bytes
		}
		if typesize == 4 {
			shuffle4SSE2(&p, &src[0], m)
		} else {
			shuffle8SSE2(&p, &src[0], m)
		}
	}
	for j := range typesize {
		d := s[j][:n]
		for i := m; i < n; i++ {
			d[i] = src[i*typesize+j]
		}
	}
	return true
}
