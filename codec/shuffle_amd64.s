//go:build amd64 && !purego

#include "textflag.h"

// Byte-unshuffle kernels, SSE2 only. Go operand order: PUNPCKLBW X1, X0
// sets X0 = interleave(low bytes of X0, low bytes of X1), i.e. Intel's
// punpcklbw xmm0, xmm1. Each level of unpacks doubles the width of the
// interleaved units (bytes, words, dwords, qwords), so log2(typesize)
// levels turn typesize streams into whole elements.
//
// Registers common to all kernels: DX = dst, CX = index into the streams,
// AX = n, R8 = &p.

// func unshuffle2SSE2(dst *byte, p *[16]*byte, n int)
TEXT ·unshuffle2SSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ p+8(FP), R8
	MOVQ n+16(FP), AX
	MOVQ 0(R8), SI
	MOVQ 8(R8), BX
	XORQ CX, CX

loop2:
	MOVOU (SI)(CX*1), X0
	MOVOU (BX)(CX*1), X1
	MOVO  X0, X2
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X2
	MOVOU X0, 0(DX)
	MOVOU X2, 16(DX)
	ADDQ  $32, DX
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loop2
	RET

// func unshuffle4SSE2(dst *byte, p *[16]*byte, n int)
TEXT ·unshuffle4SSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ p+8(FP), R8
	MOVQ n+16(FP), AX
	MOVQ 0(R8), R9
	MOVQ 8(R8), R10
	MOVQ 16(R8), R11
	MOVQ 24(R8), R12
	XORQ CX, CX

loop4:
	MOVOU (R9)(CX*1), X0
	MOVOU (R10)(CX*1), X1
	MOVOU (R11)(CX*1), X2
	MOVOU (R12)(CX*1), X3

	// bytes -> 16-bit pairs: X0 = ab e0-7, X4 = ab e8-15, X2 = cd e0-7, X5 = cd e8-15
	MOVO      X0, X4
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X4
	MOVO      X2, X5
	PUNPCKLBW X3, X2
	PUNPCKHBW X3, X5

	// pairs -> elements: X0 = e0-3, X1 = e4-7, X4 = e8-11, X3 = e12-15
	MOVO      X0, X1
	PUNPCKLWL X2, X0
	PUNPCKHWL X2, X1
	MOVO      X4, X3
	PUNPCKLWL X5, X4
	PUNPCKHWL X5, X3

	MOVOU X0, 0(DX)
	MOVOU X1, 16(DX)
	MOVOU X4, 32(DX)
	MOVOU X3, 48(DX)
	ADDQ  $64, DX
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loop4
	RET

// func unshuffle8SSE2(dst *byte, p *[16]*byte, n int)
TEXT ·unshuffle8SSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ p+8(FP), R8
	MOVQ n+16(FP), AX
	MOVQ 0(R8), R9
	MOVQ 8(R8), R10
	MOVQ 16(R8), R11
	MOVQ 24(R8), R12
	MOVQ 32(R8), R13
	MOVQ 40(R8), SI
	MOVQ 48(R8), DI
	MOVQ 56(R8), BX
	XORQ CX, CX

loop8:
	MOVOU (R9)(CX*1), X0
	MOVOU (R10)(CX*1), X1
	MOVOU (R11)(CX*1), X2
	MOVOU (R12)(CX*1), X3
	MOVOU (R13)(CX*1), X4
	MOVOU (SI)(CX*1), X5
	MOVOU (DI)(CX*1), X6
	MOVOU (BX)(CX*1), X7

	// level 1, bytes: Xa = s(a,a+1) e0-7, Xb = e8-15
	MOVO      X0, X8
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X8
	MOVO      X2, X9
	PUNPCKLBW X3, X2
	PUNPCKHBW X3, X9
	MOVO      X4, X10
	PUNPCKLBW X5, X4
	PUNPCKHBW X5, X10
	MOVO      X6, X11
	PUNPCKLBW X7, X6
	PUNPCKHBW X7, X11

	// level 2, words: bytes 0-3 of e0-3 (X0), e4-7 (X1), e8-11 (X8),
	// e12-15 (X3); bytes 4-7 of the same in X4, X5, X10, X7
	MOVO      X0, X1
	PUNPCKLWL X2, X0
	PUNPCKHWL X2, X1
	MOVO      X8, X3
	PUNPCKLWL X9, X8
	PUNPCKHWL X9, X3
	MOVO      X4, X5
	PUNPCKLWL X6, X4
	PUNPCKHWL X6, X5
	MOVO      X10, X7
	PUNPCKLWL X11, X10
	PUNPCKHWL X11, X7

	// level 3, dwords: whole elements, two per register
	MOVO      X0, X2
	PUNPCKLLQ X4, X0
	PUNPCKHLQ X4, X2
	MOVO      X1, X6
	PUNPCKLLQ X5, X1
	PUNPCKHLQ X5, X6
	MOVO      X8, X9
	PUNPCKLLQ X10, X8
	PUNPCKHLQ X10, X9
	MOVO      X3, X11
	PUNPCKLLQ X7, X3
	PUNPCKHLQ X7, X11

	MOVOU X0, 0(DX)
	MOVOU X2, 16(DX)
	MOVOU X1, 32(DX)
	MOVOU X6, 48(DX)
	MOVOU X8, 64(DX)
	MOVOU X9, 80(DX)
	MOVOU X3, 96(DX)
	MOVOU X11, 112(DX)
	ADDQ  $128, DX
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loop8
	RET

// func unshuffle16HalfSSE2(dst *byte, p *[16]*byte, n int)
// Half of a typesize-16 unshuffle: interleaves the 8 streams p[0..8) (n
// bytes each, n a multiple of 16) into the 8-byte halves dst[16i:16i+8].
// Called once for each half: with sixteen streams the same distance apart
// (a power of two in Blosc blocks) all loads would map to one L1 set and
// evict each other, at a third of the speed; eight at a time fit its ways.
TEXT ·unshuffle16HalfSSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ p+8(FP), R8
	MOVQ n+16(FP), AX
	MOVQ 0(R8), R9
	MOVQ 8(R8), R10
	MOVQ 16(R8), R11
	MOVQ 24(R8), R12
	MOVQ 32(R8), R13
	MOVQ 40(R8), SI
	MOVQ 48(R8), DI
	MOVQ 56(R8), BX
	XORQ CX, CX

loop16h:
	MOVOU (R9)(CX*1), X0
	MOVOU (R10)(CX*1), X1
	MOVOU (R11)(CX*1), X2
	MOVOU (R12)(CX*1), X3
	MOVOU (R13)(CX*1), X4
	MOVOU (SI)(CX*1), X5
	MOVOU (DI)(CX*1), X6
	MOVOU (BX)(CX*1), X7

	// The three levels of unshuffle8SSE2.
	MOVO      X0, X8
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X8
	MOVO      X2, X9
	PUNPCKLBW X3, X2
	PUNPCKHBW X3, X9
	MOVO      X4, X10
	PUNPCKLBW X5, X4
	PUNPCKHBW X5, X10
	MOVO      X6, X11
	PUNPCKLBW X7, X6
	PUNPCKHBW X7, X11

	MOVO      X0, X1
	PUNPCKLWL X2, X0
	PUNPCKHWL X2, X1
	MOVO      X8, X3
	PUNPCKLWL X9, X8
	PUNPCKHWL X9, X3
	MOVO      X4, X5
	PUNPCKLWL X6, X4
	PUNPCKHWL X6, X5
	MOVO      X10, X7
	PUNPCKLWL X11, X10
	PUNPCKHWL X11, X7

	MOVO      X0, X2
	PUNPCKLLQ X4, X0
	PUNPCKHLQ X4, X2
	MOVO      X1, X6
	PUNPCKLLQ X5, X1
	PUNPCKHLQ X5, X6
	MOVO      X8, X9
	PUNPCKLLQ X10, X8
	PUNPCKHLQ X10, X9
	MOVO      X3, X11
	PUNPCKLLQ X7, X3
	PUNPCKHLQ X7, X11

	// Elements 0..15, two per register, each to its own 16-byte slot.
	MOVQ   X0, 0(DX)
	MOVHPS X0, 16(DX)
	MOVQ   X2, 32(DX)
	MOVHPS X2, 48(DX)
	MOVQ   X1, 64(DX)
	MOVHPS X1, 80(DX)
	MOVQ   X6, 96(DX)
	MOVHPS X6, 112(DX)
	MOVQ   X8, 128(DX)
	MOVHPS X8, 144(DX)
	MOVQ   X9, 160(DX)
	MOVHPS X9, 176(DX)
	MOVQ   X3, 192(DX)
	MOVHPS X3, 208(DX)
	MOVQ   X11, 224(DX)
	MOVHPS X11, 240(DX)
	ADDQ   $256, DX
	ADDQ   $16, CX
	CMPQ   CX, AX
	JB     loop16h
	RET

// TRANSPOSE8 transposes the 8x8 bit matrix in each uint64 lane of x
// (transpose8x8 in shuffle.go), using t as scratch and the masks in
// X13, X14, X15.
#define TRANSPOSE8(x, t) \
	MOVO  x, t; \
	PSRLQ $7, t; \
	PXOR  x, t; \
	PAND  X13, t; \
	PXOR  t, x; \
	PSLLQ $7, t; \
	PXOR  t, x; \
	MOVO  x, t; \
	PSRLQ $14, t; \
	PXOR  x, t; \
	PAND  X14, t; \
	PXOR  t, x; \
	PSLLQ $14, t; \
	PXOR  t, x; \
	MOVO  x, t; \
	PSRLQ $28, t; \
	PXOR  x, t; \
	PAND  X15, t; \
	PXOR  t, x; \
	PSLLQ $28, t; \
	PXOR  t, x

// func bitTranspose8SSE2(dst *byte, p *[16]*byte, n int)
// unshuffle8SSE2 followed by TRANSPOSE8 on each output register: undoes
// the bitshuffle of one byte position for 8*n elements.
TEXT ·bitTranspose8SSE2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ p+8(FP), R8
	MOVQ n+16(FP), AX
	MOVQ 0(R8), R9
	MOVQ 8(R8), R10
	MOVQ 16(R8), R11
	MOVQ 24(R8), R12
	MOVQ 32(R8), R13
	MOVQ 40(R8), SI
	MOVQ 48(R8), DI
	MOVQ 56(R8), BX
	MOVQ $0x00AA00AA00AA00AA, CX
	MOVQ CX, X13
	PUNPCKLQDQ X13, X13
	MOVQ $0x0000CCCC0000CCCC, CX
	MOVQ CX, X14
	PUNPCKLQDQ X14, X14
	MOVQ $0x00000000F0F0F0F0, CX
	MOVQ CX, X15
	PUNPCKLQDQ X15, X15
	XORQ CX, CX

loopbt:
	MOVOU (R9)(CX*1), X0
	MOVOU (R10)(CX*1), X1
	MOVOU (R11)(CX*1), X2
	MOVOU (R12)(CX*1), X3
	MOVOU (R13)(CX*1), X4
	MOVOU (SI)(CX*1), X5
	MOVOU (DI)(CX*1), X6
	MOVOU (BX)(CX*1), X7

	MOVO      X0, X8
	PUNPCKLBW X1, X0
	PUNPCKHBW X1, X8
	MOVO      X2, X9
	PUNPCKLBW X3, X2
	PUNPCKHBW X3, X9
	MOVO      X4, X10
	PUNPCKLBW X5, X4
	PUNPCKHBW X5, X10
	MOVO      X6, X11
	PUNPCKLBW X7, X6
	PUNPCKHBW X7, X11

	MOVO      X0, X1
	PUNPCKLWL X2, X0
	PUNPCKHWL X2, X1
	MOVO      X8, X3
	PUNPCKLWL X9, X8
	PUNPCKHWL X9, X3
	MOVO      X4, X5
	PUNPCKLWL X6, X4
	PUNPCKHWL X6, X5
	MOVO      X10, X7
	PUNPCKLWL X11, X10
	PUNPCKHWL X11, X7

	MOVO      X0, X2
	PUNPCKLLQ X4, X0
	PUNPCKHLQ X4, X2
	MOVO      X1, X6
	PUNPCKLLQ X5, X1
	PUNPCKHLQ X5, X6
	MOVO      X8, X9
	PUNPCKLLQ X10, X8
	PUNPCKHLQ X10, X9
	MOVO      X3, X11
	PUNPCKLLQ X7, X3
	PUNPCKHLQ X7, X11

	TRANSPOSE8(X0, X4)
	TRANSPOSE8(X2, X5)
	TRANSPOSE8(X1, X7)
	TRANSPOSE8(X6, X10)
	TRANSPOSE8(X8, X12)
	TRANSPOSE8(X9, X4)
	TRANSPOSE8(X3, X5)
	TRANSPOSE8(X11, X7)

	MOVOU X0, 0(DX)
	MOVOU X2, 16(DX)
	MOVOU X1, 32(DX)
	MOVOU X6, 48(DX)
	MOVOU X8, 64(DX)
	MOVOU X9, 80(DX)
	MOVOU X3, 96(DX)
	MOVOU X11, 112(DX)
	ADDQ  $128, DX
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loopbt
	RET
