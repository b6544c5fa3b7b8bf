package codec

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unsafe"
)

// The LZ4 block compressor of liblz4's LZ4_compress_fast (lz4.c,
// LZ4_compress_generic, BSD 2-clause), which c-blosc and numcodecs call.
// pierrec/lz4's compressor uses a larger hash table and a different skip
// rule, so on shuffled floats it lands elsewhere in ratio and speed than
// the C library everyone compares with; this one follows the C
// algorithm step for step: a 4096-entry table of positions hashed from 5
// bytes (8192 entries hashed from 4 bytes for inputs under 64 KiB), and
// the acceleration step that c-blosc ties to clevel (10 - clevel).
//
// The format is the LZ4 block format (zarr-formats.md §1.6), which
// pierrec's UncompressBlock, and lz4Block, read.

const (
	lz4MinMatch     = 4
	lz4MFLimit      = 12 // the last match starts at least 12 bytes before the end
	lz4LastLiterals = 5  // the last 5 bytes are always literals
	lz4MinLength    = lz4MFLimit + 1
	lz4SkipTrigger  = 6
	lz4MaxDistance  = 65535
	lz4Small        = 64<<10 + lz4MFLimit - 1 // LZ4_64Klimit: below it positions fit in 16 bits
	lz4MaxInput     = 0x7E000000              // LZ4_MAX_INPUT_SIZE
	lz4HashLog      = 12                      // LZ4_MEMORY_USAGE 14: 16 KiB of uint32
)

// lz4Bound is LZ4_compressBound: the largest LZ4 block n bytes give.
func lz4Bound(n int) int { return n + n/255 + 16 }

// lz4Table is the hash table of one compression; pooled, cleared per call.
type lz4Table [1 << (lz4HashLog + 1)]uint32

var lz4Tables = sync.Pool{New: func() any { return new(lz4Table) }}

// lz4Compress writes the LZ4 block of src into dst and returns its length,
// or 0 when it does not fit in len(dst) (as LZ4_compress_fast returns 0
// for a full output). accel >= 1 is liblz4's acceleration: the search
// step starts at accel and grows by one every 64 misses.
func lz4Compress(dst, src []byte, accel int) int {
	if len(src) > lz4MaxInput {
		return 0
	}
	accel = max(accel, 1)
	t := lz4Tables.Get().(*lz4Table)
	defer lz4Tables.Put(t)
	// The two table types of liblz4: LZ4_hash4 (13 bits of the 4 bytes at
	// a position) for small inputs, LZ4_hash5 (12 bits of 5 bytes) for
	// the others.
	small := len(src) < lz4Small
	tab := t[:1<<lz4HashLog]
	if small {
		tab = t[:]
	}
	clear(tab)
	base := unsafe.Pointer(unsafe.SliceData(src))
	load32 := func(p int) uint32 { return lz4Load32(base, p) }
	hash := func(p int) uint32 {
		x := lz4Load64(base, p)
		if small {
			return uint32(x) * 2654435761 >> (32 - (lz4HashLog + 1))
		}
		return uint32((x << 24) * 889523592379 >> (64 - lz4HashLog))
	}

	n := len(src)
	op, anchor := 0, 0
	if n >= lz4MinLength {
		mflimitPlusOne := n - lz4MFLimit + 1
		matchLimit := n - lz4LastLiterals
		tab[hash(0)] = 0
		ip := 1
		forwardH := hash(ip)
	search:
		for {
			// Find a match, stepping faster the longer there is none.
			var match int
			fwd, step, searchNb := ip, 1, accel<<lz4SkipTrigger
			for {
				h, cur := forwardH, fwd
				m := int(tab[h])
				ip = fwd
				fwd += step
				step = searchNb >> lz4SkipTrigger
				searchNb++
				if fwd > mflimitPlusOne {
					break search
				}
				forwardH = hash(fwd)
				tab[h] = uint32(cur)
				if !small && m+lz4MaxDistance < cur {
					continue // too far
				}
				if load32(m) == load32(ip) {
					match = m
					break
				}
			}
			// Catch up: extend the match backwards over the literals.
			for ip > anchor && match > 0 && src[ip-1] == src[match-1] {
				ip--
				match--
			}
			lit := ip - anchor
			if op+1+lit+(2+1+lz4LastLiterals)+lit/255 > len(dst) {
				return 0
			}
			token := op
			op = lz4PutLen(dst, op+1, token, lit, 4)
			op += copy(dst[op:], src[anchor:ip])
			for {
				// Encode the match at ip (offset ip-match).
				binary.LittleEndian.PutUint16(dst[op:], uint16(ip-match))
				op += 2
				ml := lz4Count(base, ip+lz4MinMatch, match+lz4MinMatch, matchLimit)
				ip += ml + lz4MinMatch
				if op+(1+lz4LastLiterals)+(ml+240)/255 > len(dst) {
					return 0
				}
				op = lz4PutLen(dst, op, token, ml, 0)
				anchor = ip
				if ip >= mflimitPlusOne {
					break search
				}
				tab[hash(ip-2)] = uint32(ip - 2)
				// A match right here continues without literals.
				h := hash(ip)
				m := int(tab[h])
				tab[h] = uint32(ip)
				if (!small && m+lz4MaxDistance < ip) || load32(m) != load32(ip) {
					break
				}
				match = m
				token = op
				dst[token] = 0
				op++
			}
			ip++
			forwardH = hash(ip)
		}
	}
	// The last literals.
	last := n - anchor
	if op+last+1+(last+255-15)/255 > len(dst) {
		return 0
	}
	token := op
	op = lz4PutLen(dst, op+1, token, last, 4)
	op += copy(dst[op:], src[anchor:])
	return op
}

// lz4PutLen stores length n in the nibble of dst[token] at shift (4: the
// literal length, 0: the match length beyond 4), with the extra bytes of
// lengths of 15 and more at op, and returns the position after them. The
// caller has checked the room.
func lz4PutLen(dst []byte, op, token, n int, shift uint) int {
	if shift == 4 {
		dst[token] = 0
	}
	if n < 15 {
		dst[token] |= byte(n << shift)
		return op
	}
	dst[token] |= 15 << shift
	n -= 15
	for ; n >= 255; n -= 255 {
		dst[op] = 255
		op++
	}
	dst[op] = byte(n)
	return op + 1
}

// lz4Count returns how many bytes from src[in:] equal those from
// src[match:] (match < in), stopping at limit <= len(src); base is
// &src[0].
func lz4Count(base unsafe.Pointer, in, match, limit int) int {
	start := in
	for in+8 <= limit {
		if x := lz4Load64(base, in) ^ lz4Load64(base, match); x != 0 {
			return in + bits.TrailingZeros64(x)>>3 - start
		}
		in += 8
		match += 8
	}
	for in < limit && lz4Load8(base, in) == lz4Load8(base, match) {
		in++
		match++
	}
	return in - start
}

// Loads from the input without bounds checks, which cost a fifth of the
// compressor's time on shuffled floats. Every position the compressor
// loads from is below len(src)-8 by its limits (mflimitPlusOne,
// matchLimit), which FuzzEncode exercises.

func lz4Load8(base unsafe.Pointer, i int) byte { return *(*byte)(unsafe.Add(base, i)) }

func lz4Load32(base unsafe.Pointer, i int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(base, i)), 4))
}

func lz4Load64(base unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(base, i)), 8))
}
