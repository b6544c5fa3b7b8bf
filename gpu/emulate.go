package gpu

import "encoding/binary"

// A pure-Go emulation of exactly what the kernels compute, statement for
// statement: zf_lz4 (gpu/kernels/lz4.cu) and zf_unshuffle
// (gpu/kernels/shuffle.cu). The emulated engine runs a packed slice through
// these functions on host memory, so tests check the host-side layout end to
// end without a GPU, and GPU tests compare the device against it.
//
// The kernels' lane loops (lane k copies bytes k, k+32, ...) are plain
// loops here: the kernels only ever read bytes written before the current
// sequence (match bytes come from out[di-off : di], with period off), so
// the order of the byte copies within a sequence does not matter.

// emuLZ4 runs zf_lz4 over the n stream descriptors in desc, reading src and
// writing dst, and stores each stream's status in its descriptor.
func emuLZ4(desc []byte, n int, src, dst []byte) {
	le := binary.LittleEndian
	for w := range n {
		e := desc[w*descSize : (w+1)*descSize]
		srcOff, dstOff := le.Uint64(e[0:]), le.Uint64(e[8:])
		srcLen, dstLen := le.Uint32(e[16:]), le.Uint32(e[20:])
		kind := le.Uint32(e[28:])
		var st int32
		switch kind {
		case kindLZ4:
			st = emuLZ4Warp(src[srcOff:srcOff+uint64(srcLen)], dst[dstOff:dstOff+uint64(dstLen)])
		case kindStored:
			st = emuStoredWarp(src[srcOff:srcOff+uint64(srcLen)], dst[dstOff:dstOff+uint64(dstLen)])
		default:
			st = statusKind
		}
		le.PutUint32(e[24:], uint32(st))
	}
}

// emuLZ4Warp is zf_lz4_warp: decode the LZ4 block src into exactly
// len(dst) bytes. Slicing src and dst to their lengths makes any read or
// write out of bounds a panic in tests, where the kernel would corrupt
// memory.
func emuLZ4Warp(src, dst []byte) int32 {
	slen, dlen := uint32(len(src)), uint32(len(dst))
	if slen == 0 {
		if dlen == 0 {
			return statusOK
		}
		return statusSize
	}
	var si, di uint32
	for si < slen {
		token := uint32(src[si])
		si++
		lit := token >> 4
		if lit == 15 {
			for {
				if si >= slen {
					return statusSrc
				}
				x := uint32(src[si])
				si++
				lit += x
				if lit > dlen {
					return statusDst
				}
				if x != 255 {
					break
				}
			}
		}
		if lit > 0 {
			if lit > slen-si {
				return statusSrc
			}
			if lit > dlen-di {
				return statusDst
			}
			copy(dst[di:di+lit], src[si:si+lit]) // lanes k, k+32, ...: independent bytes
			si += lit
			di += lit
		}
		if si == slen {
			if token&15 == 0 {
				break
			}
			return statusSrc
		}
		if slen-si < 2 {
			return statusSrc
		}
		off := uint32(src[si]) | uint32(src[si+1])<<8
		si += 2
		if off == 0 {
			return statusOffset
		}
		ml := token&15 + 4
		// The match length extends as the literal length did above; the
		// two loops stay inline, as in the kernel this emulates.
		if token&15 == 15 {
			for {
				if si >= slen {
					return statusSrc
				}
				x := uint32(src[si])
				si++
				ml += x
				if ml > dlen {
					return statusDst
				}
				if x != 255 {
					break
				}
			}
		}
		if off > di {
			return statusOffset
		}
		if ml > dlen-di {
			return statusDst
		}
		m := di - off
		if off >= ml {
			copy(dst[di:di+ml], dst[m:m+ml]) // no overlap
		} else {
			for k := range ml {
				dst[di+k] = dst[m+k%off]
			}
		}
		di += ml
	}
	if di == dlen {
		return statusOK
	}
	return statusSize
}

// emuStoredWarp is zf_stored_warp.
func emuStoredWarp(src, dst []byte) int32 {
	if len(src) != len(dst) {
		return statusSize
	}
	copy(dst, src)
	return statusOK
}

// emuUnshuffle runs zf_unshuffle over the n block descriptors in desc,
// reading src (the stage buffer) and writing dst (the output buffer).
func emuUnshuffle(desc []byte, n int, src, dst []byte) {
	le := binary.LittleEndian
	for bi := range n {
		e := desc[bi*descSize : (bi+1)*descSize]
		srcOff, dstOff := le.Uint64(e[0:]), le.Uint64(e[8:])
		l, ts, mode := le.Uint32(e[16:]), le.Uint32(e[20:]), le.Uint32(e[24:])
		emuUnshuffleBlock(src[srcOff:srcOff+uint64(l)], dst[dstOff:dstOff+uint64(l)], ts, mode)
	}
}

// emuUnshuffleBlock is the body of zf_unshuffle for one block, with the
// grid-stride loops run as plain loops.
func emuUnshuffleBlock(in, out []byte, ts, mode uint32) {
	l := uint32(len(in))
	var ne uint32
	if ts > 0 {
		ne = l / ts
	}
	if mode == modeByte && ts <= 1 {
		mode = modeCopy
	}
	if mode == modeBit && (ts == 0 || ne == 0 || ne%8 != 0) {
		mode = modeCopy
	}
	if mode != modeByte && mode != modeBit {
		mode = modeCopy
	}
	var body uint32
	switch mode {
	case modeByte:
		body = ne * ts
		for i := range body {
			e := i / ts
			j := i - e*ts
			out[i] = in[j*ne+e]
		}
	case modeBit:
		body = ne * ts
		nb := ne / 8
		for w := range nb * ts {
			j := w / nb
			g := w - j*nb
			p := 8*j*nb + g
			var x uint64
			for k := range uint32(8) {
				x |= uint64(in[p+k*nb]) << (8 * k)
			}
			x = transpose8(x)
			o := 8 * g * ts
			for e := range uint32(8) {
				out[o+e*ts+j] = byte(x >> (8 * e))
			}
		}
	}
	for i := body; i < l; i++ {
		out[i] = in[i]
	}
}

// transpose8 is zf_transpose8: it transposes the 8x8 bit matrix whose row r
// is byte r of x and whose column c is bit c of that byte.
func transpose8(x uint64) uint64 {
	t := (x ^ (x >> 7)) & 0x00AA00AA00AA00AA
	x = x ^ t ^ (t << 7)
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCC
	x = x ^ t ^ (t << 14)
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0
	x = x ^ t ^ (t << 28)
	return x
}

// emuEngine runs slices with the emulated kernels. Its "device" buffers are
// host slices, refilled with a new byte before every run so that any output
// byte the kernels fail to write shows up as a mismatch in tests.
type emuEngine struct{}

type emuSlot struct {
	din, stage, result []byte
	fill               byte // changes every run
}

func (e *emuEngine) name() string { return "emulated" }

func (e *emuEngine) alloc(inCap, outCap int) (*slot, error) {
	return &slot{
		in:  make([]byte, inCap),
		out: make([]byte, outCap),
		dev: &emuSlot{din: make([]byte, inCap), stage: make([]byte, outCap), result: make([]byte, outCap)},
	}, nil
}

func (e *emuEngine) free(*slot) {}
func (e *emuEngine) close()     {}

// run does what cudaEngine.run does: upload, decode, unshuffle, download.
func (e *emuEngine) run(s *slot, sl *slice) error {
	d := s.dev.(*emuSlot)
	d.fill++
	for _, b := range [][]byte{d.stage[:sl.outLen], d.result[:sl.outLen]} {
		for i := range b {
			b[i] = d.fill
		}
	}
	copy(d.din, s.in[:sl.inLen()])
	emuLZ4(d.din[:sl.streams*descSize], sl.streams, d.din[sl.srcOff():sl.inLen()], d.stage[:sl.outLen])
	res := d.stage
	if sl.shuffle {
		emuUnshuffle(d.din[sl.blkOff():sl.blkOff()+sl.blocks*descSize], sl.blocks, d.stage[:sl.outLen], d.result[:sl.outLen])
		res = d.result
	}
	copy(s.out, d.din[:sl.streams*descSize])
	copy(s.out[sl.outOff():], res[:sl.outLen])
	return nil
}
