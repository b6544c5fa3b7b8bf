package netcdf

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ErrName means a name breaks netCDF's rules for names of dimensions,
// variables and attributes.
var ErrName = errors.New("netcdf: invalid name")

// Name returns s as a netCDF name: NFC-normalised, as netCDF-C stores
// names, and checked by the rules netCDF-C's NC_check_name applies to
// every name it defines: not empty; valid UTF-8; at most MaxName bytes;
// a first character that is an ASCII letter, digit or underscore, or any
// multibyte character; no control character, DEL or '/' after it; no
// trailing space. Otherwise the error wraps ErrName and says why.
func Name(s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w %q: %s", ErrName, s, why)
	}
	switch {
	case s == "":
		return bad("empty")
	case !utf8.ValidString(s):
		return bad("not UTF-8")
	}
	s = norm.NFC.String(s)
	if len(s) > MaxName {
		return bad(fmt.Sprintf("longer than %d bytes", MaxName))
	}
	for i, r := range s {
		switch {
		case r >= utf8.RuneSelf:
		case i == 0 && !(r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'):
			return bad("the first character must be a letter, a digit or '_'")
		case r == '/':
			return bad("holds '/'")
		case r < ' ' || r == 0x7f:
			return bad("holds a control character")
		}
	}
	if c := s[len(s)-1]; c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' {
		return bad("ends in a space")
	}
	return s, nil
}
