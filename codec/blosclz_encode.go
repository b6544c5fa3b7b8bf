package codec

import (
	"encoding/binary"
	"sync"
)

// The BloscLZ compressor of c-blosc 1.21 (blosclz.c, blosclz_compress;
// BSD 3-clause, derived from FastLZ), step for step, including its entropy
// probe, which gives up on streams that would compress less than the
// clevel's minimum ratio (c-blosc then stores them raw). The stream format
// is the one blosclzDecompress reads (zarr-formats.md §1.7).

const (
	blosclzMaxCopy    = 32
	blosclzMaxFar     = 65535 + bloscLZMaxDistance - 1 // MAX_FARDISTANCE
	blosclzHashLog    = 14
	blosclzProbeLog   = 12
	blosclzHashPrime  = 2654435761
	blosclzMinMaxOut  = 66
	blosclzMinLength  = 16
	blosclzLastLitLen = 12
)

// blosclzMinRatio is cratio_ of blosclz_compress: below it, per clevel, a
// stream is not worth compressing.
var blosclzMinRatio = [10]float64{0, 2, 1.5, 1.2, 1.2, 1.2, 1.2, 1.15, 1.1, 1.0}

// blosclzHashLogs is hashlog_ of blosclz_compress, per clevel.
var blosclzHashLogs = [10]uint{0, blosclzHashLog - 2, blosclzHashLog - 1, blosclzHashLog, blosclzHashLog,
	blosclzHashLog, blosclzHashLog, blosclzHashLog, blosclzHashLog, blosclzHashLog}

type blosclzTable [1 << blosclzHashLog]uint32

var blosclzTables = sync.Pool{New: func() any { return new(blosclzTable) }}

func blosclzHash(seq uint32, log uint) uint32 { return seq * blosclzHashPrime >> (32 - log) }

// blosclzRun returns where the run of the byte before ip (the bytes from
// ref equal to it) ends, not past bound.
func blosclzRun(in []byte, ip, bound, ref int) int {
	x := in[ip-1]
	for ip < bound && in[ref] == x {
		ip++
		ref++
	}
	return ip
}

// blosclzMatch returns one past where in[ip:] and in[ref:] first differ,
// as get_match does (it steps past the differing byte), or bound.
func blosclzMatch(in []byte, ip, bound, ref int) int {
	for ip+8 < bound {
		if binary.LittleEndian.Uint64(in[ip:]) != binary.LittleEndian.Uint64(in[ref:]) {
			break
		}
		ip += 8
		ref += 8
	}
	for ip < bound {
		same := in[ref] == in[ip]
		ip++
		ref++
		if !same {
			return ip
		}
	}
	return ip
}

// blosclzRunOrMatch is get_run_or_match.
func blosclzRunOrMatch(in []byte, ip, bound, ref int, run bool) int {
	if run {
		return blosclzRun(in, ip, bound, ref)
	}
	return blosclzMatch(in, ip, bound, ref)
}

// blosclzRatio is get_cratio: an estimate of the compression ratio of in,
// from a dry run over its first 4 KiB.
func blosclzRatio(in []byte, minlen, ipshift int) float64 {
	var htab [1 << blosclzProbeLog]uint16
	limit := min(len(in), 1<<blosclzProbeLog)
	bound, ipLimit := limit-1, limit-blosclzLastLitLen
	ip, oc, cp := 0, 5, 4
	literal := func(anchor int) int {
		oc++
		cp++
		if cp == blosclzMaxCopy {
			cp = 0
			oc++
		}
		return anchor + 1
	}
	for ip < ipLimit {
		anchor := ip
		h := blosclzHash(binary.LittleEndian.Uint32(in[ip:]), blosclzProbeLog)
		ref := int(htab[h])
		dist := anchor - ref
		htab[h] = uint16(anchor)
		if dist == 0 || dist >= blosclzMaxFar || binary.LittleEndian.Uint32(in[ref:]) != binary.LittleEndian.Uint32(in[ip:]) {
			ip = literal(anchor)
			continue
		}
		dist--
		ip = blosclzRunOrMatch(in, anchor+4, bound, ref+4, dist == 0) - ipshift
		n := ip - anchor
		if n < minlen {
			ip = literal(anchor)
			continue
		}
		if cp == 0 {
			oc--
		}
		cp = 0
		if n >= 7 {
			oc += (n-7)/255 + 1
		}
		if dist < bloscLZMaxDistance {
			oc += 2
		} else {
			oc += 4
		}
		htab[blosclzHash(binary.LittleEndian.Uint32(in[ip:]), blosclzProbeLog)] = uint16(ip)
		ip += 2
		oc++
	}
	return float64(ip) / float64(oc)
}

// blosclzCompress writes the BloscLZ stream of in into out and returns its
// length, or 0 when c-blosc would not compress it (too small, or the probe
// or the output say it does not pay).
func blosclzCompress(out, in []byte, clevel int, split bool) int {
	length := len(in)
	clevel = min(max(clevel, 0), 9)
	maxlen := length / 4
	cratio := blosclzRatio(in[length-maxlen:], 3, 3)
	if cratio < blosclzMinRatio[clevel] {
		return 0
	}
	ipshift, minlen := 4, 4
	if !split || cratio < 4 {
		ipshift, minlen = 3, 3
	}
	if length < blosclzMinLength || len(out) < blosclzMinMaxOut {
		return 0
	}
	hashlog := blosclzHashLogs[clevel]
	t := blosclzTables.Get().(*blosclzTable)
	defer blosclzTables.Put(t)
	htab := t[:1<<hashlog]
	clear(htab)

	ip, bound, ipLimit := 0, length-1, length-blosclzLastLitLen
	op, olimit := 0, len(out)
	// literal copies in[anchor] as c-blosc's LITERAL macro does; false
	// when the output is full.
	cp := 4
	literal := func(anchor int) bool {
		if op+2 > olimit {
			return false
		}
		out[op] = in[anchor]
		op++
		cp++
		if cp == blosclzMaxCopy {
			cp = 0
			out[op] = blosclzMaxCopy - 1
			op++
		}
		return true
	}
	out[0] = blosclzMaxCopy - 1
	copy(out[1:5], in[:4])
	op, ip = 5, 4
	for ip < ipLimit {
		anchor := ip
		seq := binary.LittleEndian.Uint32(in[ip:])
		h := blosclzHash(seq, hashlog)
		ref := int(htab[h])
		dist := anchor - ref
		htab[h] = uint32(anchor)
		if dist == 0 || dist >= blosclzMaxFar || binary.LittleEndian.Uint32(in[ref:]) != seq {
			if !literal(anchor) {
				return 0
			}
			ip = anchor + 1
			continue
		}
		dist--
		ip = blosclzRunOrMatch(in, anchor+4, bound, ref+4, dist == 0) - ipshift
		n := ip - anchor
		if n < minlen || (n <= 5 && dist >= bloscLZMaxDistance) {
			if !literal(anchor) {
				return 0
			}
			ip = anchor + 1
			continue
		}
		if cp > 0 {
			out[op-cp-1] = byte(cp - 1) // the literal run's length
		} else {
			op-- // no literals: drop the run's header
		}
		cp = 0
		if op = blosclzPutMatch(out, op, n, dist); op < 0 {
			return 0
		}
		seq = binary.LittleEndian.Uint32(in[ip:])
		htab[blosclzHash(seq, hashlog)] = uint32(ip)
		ip++
		if clevel == 9 {
			htab[blosclzHash(seq>>8, hashlog)] = uint32(ip)
		}
		ip++
		if op+1 > olimit {
			return 0
		}
		out[op] = blosclzMaxCopy - 1
		op++
	}
	for ; ip <= bound; ip++ {
		if !literal(ip) {
			return 0
		}
	}
	if cp > 0 {
		out[op-cp-1] = byte(cp - 1)
	} else {
		op--
	}
	out[0] |= 1 << 5 // blosclz's marker
	return op
}

// blosclzPutMatch encodes a match of n (biased: 1 means 3 bytes) at dist
// (biased by one) at out[op:] and returns the position after it, or -1
// when the output is full: MATCH_SHORT, MATCH_LONG and their far forms.
func blosclzPutMatch(out []byte, op, n, dist int) int {
	far := dist >= bloscLZMaxDistance
	if far {
		dist -= bloscLZMaxDistance
	}
	need := func(k int) bool { return op+k <= len(out) }
	hi := dist >> 8
	if far {
		hi = 31
	}
	if n < 7 {
		if !need(2) {
			return -1
		}
		out[op] = byte(n<<5 + hi)
		op++
	} else {
		if !need(1) {
			return -1
		}
		out[op] = byte(7<<5 + hi)
		op++
		for n -= 7; n >= 255; n -= 255 {
			if !need(1) {
				return -1
			}
			out[op] = 255
			op++
		}
		if !need(2) {
			return -1
		}
		out[op] = byte(n)
		op++
	}
	if !far {
		if !need(1) {
			return -1
		}
		out[op] = byte(dist)
		return op + 1
	}
	if !need(3) {
		return -1
	}
	out[op], out[op+1], out[op+2] = 255, byte(dist>>8), byte(dist)
	return op + 3
}
