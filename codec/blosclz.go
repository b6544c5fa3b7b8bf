package codec

import "fmt"

var errBloscLZ = fmt.Errorf("%w: blosclz stream", ErrCorrupt)

// bloscLZMaxDistance is MAX_DISTANCE in blosclz.c: far matches store their
// distance minus this (and minus one).
const bloscLZMaxDistance = 8191

// blosclzDecompress decodes the BloscLZ stream in (zarr-formats.md §1.7;
// c-blosc blosclz.c blosclz_decompress) into out and returns the number of
// bytes written. It never writes past len(out): output that would not fit,
// a truncated stream or a match reaching before the start is errBloscLZ.
// An empty stream decodes to nothing.
//
// A stream that ends right after a match copies the match and stops, as
// c-blosc before 1.17.1 did (later versions stop before copying; encoders
// never end a stream on a match, see §1.7).
func blosclzDecompress(out, in []byte) (int, error) {
	if len(in) == 0 {
		return 0, nil
	}
	op, ip := 0, 1
	ctrl := int(in[0] & 31) // the top 3 bits of byte 0 are a format marker
	for {
		if ctrl < 32 {
			// Literal run of ctrl+1 bytes.
			n := ctrl + 1
			if n > len(out)-op || n > len(in)-ip {
				return op, errBloscLZ
			}
			copy(out[op:op+n], in[ip:ip+n])
			op += n
			ip += n
		} else {
			// Match: length from the top 3 bits (7 = long), distance from
			// the low 5 bits and the next byte (255 with 31 = far).
			length := ctrl>>5 - 1
			ofs := (ctrl & 31) << 8
			if length == 6 {
				for {
					if ip >= len(in) {
						return op, errBloscLZ
					}
					c := in[ip]
					ip++
					length += int(c)
					if c != 255 {
						break
					}
				}
			}
			if ip >= len(in) {
				return op, errBloscLZ
			}
			code := int(in[ip])
			ip++
			length += 3
			dist := ofs + code + 1
			if code == 255 && ofs == 31<<8 {
				if len(in)-ip < 2 {
					return op, errBloscLZ
				}
				dist = (int(in[ip])<<8 | int(in[ip+1])) + bloscLZMaxDistance + 1
				ip += 2
			}
			if dist > op || length > len(out)-op {
				return op, errBloscLZ
			}
			op = copyMatch(out, op, dist, length)
		}
		if ip >= len(in) {
			return op, nil
		}
		ctrl = int(in[ip])
		ip++
	}
}

// copyMatch copies length bytes from out[op-dist:] to out[op:], byte by
// byte in effect (overlap repeats the pattern), and returns op+length. The
// caller checks 0 < dist <= op and op+length <= len(out).
func copyMatch(out []byte, op, dist, length int) int {
	end := op + length
	s := op - dist
	if dist >= length {
		copy(out[op:end], out[s:s+length])
		return end
	}
	// The window out[s:op] is periodic with period dist; each copy doubles it.
	for op < end {
		op += copy(out[op:end], out[s:op])
	}
	return end
}
