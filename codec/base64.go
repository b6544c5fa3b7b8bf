package codec

import (
	"encoding/base64"
	"fmt"
)

func init() { register("base64", newBase64) }

// base64Codec decodes numcodecs "base64": standard-alphabet base64 with
// padding. As Python's standard_b64decode does, bytes outside the alphabet
// (newlines, spaces) are ignored. base64Codec is safe for concurrent use.
type base64Codec struct{}

var (
	_ Decoder      = base64Codec{}
	_ EncodedSizer = base64Codec{}
)

func newBase64(Config) (Decoder, error) { return base64Codec{}, nil }

// base64Chars marks the bytes of the standard alphabet and '='.
var base64Chars = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") {
		t[c] = true
	}
	return t
}()

func base64Char(c byte) bool { return base64Chars[c] }

func (base64Codec) Decode(dst, src []byte) ([]byte, error) {
	clean := src
	for i, c := range src {
		if !base64Char(c) { // rare: filter into a copy
			clean = make([]byte, i, len(src))
			copy(clean, src)
			for _, c := range src[i:] {
				if base64Char(c) {
					clean = append(clean, c)
				}
			}
			break
		}
	}
	if len(clean)%4 != 0 {
		return dst, fmt.Errorf("%w: base64: %d characters, not a multiple of 4", ErrCorrupt, len(clean))
	}
	n := len(clean) / 4 * 3
	for i := len(clean) - 1; i >= 0 && i >= len(clean)-2 && clean[i] == '='; i-- {
		n--
	}
	if n > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	// Python ignores set padding bits, so no Strict(). Decode writes only
	// the m decoded bytes, m <= n <= the room checked above.
	m, err := base64.StdEncoding.Decode(dst[len(dst):cap(dst)], clean)
	if err != nil || m != n {
		return dst, fmt.Errorf("%w: base64: %v", ErrCorrupt, err)
	}
	return dst[:len(dst)+n], nil
}

// EncodedLen is the padded base64 length of n bytes.
func (base64Codec) EncodedLen(n int) (int, error) { return base64.StdEncoding.EncodedLen(n), nil }
