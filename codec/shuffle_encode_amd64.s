//go:build amd64 && !purego

#include "textflag.h"

// Byte-shuffle kernels, SSE2 only: c-blosc's shuffle4_sse2 and
// shuffle8_sse2 (shuffle-sse2.c), the inverses of the unshuffle kernels.
// Go operand order: PUNPCKLBW X0, X8 sets X8 = interleave(low bytes of X8,
// low bytes of X0), i.e. Intel's punpcklbw xmm8, xmm0; PSHUFL $imm, X0, X8
// is pshufd xmm8, xmm0, imm.
//
// Each kernel reads 16 elements per round from src and writes 16 bytes to
// each of its streams p[0..typesize); n (the bytes per stream) is a
// positive multiple of 16.

// func shuffle4SSE2(p *[16]*byte, src *byte, n int)
TEXT ·shuffle4SSE2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), R8
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), AX
	MOVQ 0(R8), R9
	MOVQ 8(R8), R10
	MOVQ 16(R8), R11
	MOVQ 24(R8), R12
	XORQ CX, CX

loop4:
	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3

	// Within each register (four elements): bytes, then words, gathered
	// by position.
	PSHUFL    $0xd8, X0, X8
	PSHUFL    $0x8d, X0, X0
	PUNPCKLBW X0, X8
	PSHUFL    $0x4e, X8, X0
	PUNPCKLWL X0, X8

	PSHUFL    $0xd8, X1, X9
	PSHUFL    $0x8d, X1, X1
	PUNPCKLBW X1, X9
	PSHUFL    $0x4e, X9, X1
	PUNPCKLWL X1, X9

	PSHUFL    $0xd8, X2, X10
	PSHUFL    $0x8d, X2, X2
	PUNPCKLBW X2, X10
	PSHUFL    $0x4e, X10, X2
	PUNPCKLWL X2, X10

	PSHUFL    $0xd8, X3, X11
	PSHUFL    $0x8d, X3, X3
	PUNPCKLBW X3, X11
	PSHUFL    $0x4e, X11, X3
	PUNPCKLWL X3, X11

	// Across registers: double words, then quad words.
	MOVO      X8, X12
	PUNPCKLLQ X9, X8
	PUNPCKHLQ X9, X12
	MOVO      X10, X13
	PUNPCKLLQ X11, X10
	PUNPCKHLQ X11, X13

	MOVO       X8, X14
	PUNPCKLQDQ X10, X8
	PUNPCKHQDQ X10, X14
	MOVO       X12, X15
	PUNPCKLQDQ X13, X12
	PUNPCKHQDQ X13, X15

	MOVOU X8, (R9)(CX*1)
	MOVOU X14, (R10)(CX*1)
	MOVOU X12, (R11)(CX*1)
	MOVOU X15, (R12)(CX*1)
	ADDQ  $64, SI
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loop4
	RET

// func shuffle8SSE2(p *[16]*byte, src *byte, n int)
TEXT ·shuffle8SSE2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), R8
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), AX
	XORQ CX, CX

loop8:
	// Within each register (two elements): bytes by position.
	MOVOU     0(SI), X0
	PSHUFL    $0x4e, X0, X8
	PUNPCKLBW X8, X0
	MOVOU     16(SI), X1
	PSHUFL    $0x4e, X1, X9
	PUNPCKLBW X9, X1
	MOVOU     32(SI), X2
	PSHUFL    $0x4e, X2, X10
	PUNPCKLBW X10, X2
	MOVOU     48(SI), X3
	PSHUFL    $0x4e, X3, X11
	PUNPCKLBW X11, X3
	MOVOU     64(SI), X4
	PSHUFL    $0x4e, X4, X12
	PUNPCKLBW X12, X4
	MOVOU     80(SI), X5
	PSHUFL    $0x4e, X5, X13
	PUNPCKLBW X13, X5
	MOVOU     96(SI), X6
	PSHUFL    $0x4e, X6, X14
	PUNPCKLBW X14, X6
	MOVOU     112(SI), X7
	PSHUFL    $0x4e, X7, X15
	PUNPCKLBW X15, X7

	// Words: X8..X15 = lo/hi of (X0,X1), (X2,X3), (X4,X5), (X6,X7).
	MOVO      X0, X8
	PUNPCKLWL X1, X8
	MOVO      X0, X9
	PUNPCKHWL X1, X9
	MOVO      X2, X10
	PUNPCKLWL X3, X10
	MOVO      X2, X11
	PUNPCKHWL X3, X11
	MOVO      X4, X12
	PUNPCKLWL X5, X12
	MOVO      X4, X13
	PUNPCKHWL X5, X13
	MOVO      X6, X14
	PUNPCKLWL X7, X14
	MOVO      X6, X15
	PUNPCKHWL X7, X15

	// Double words: X0..X7 = lo/hi of (X8,X10), (X9,X11), (X12,X14), (X13,X15).
	MOVO      X8, X0
	PUNPCKLLQ X10, X0
	MOVO      X8, X1
	PUNPCKHLQ X10, X1
	MOVO      X9, X2
	PUNPCKLLQ X11, X2
	MOVO      X9, X3
	PUNPCKHLQ X11, X3
	MOVO      X12, X4
	PUNPCKLLQ X14, X4
	MOVO      X12, X5
	PUNPCKHLQ X14, X5
	MOVO      X13, X6
	PUNPCKLLQ X15, X6
	MOVO      X13, X7
	PUNPCKHLQ X15, X7

	// Quad words: stream 2k, 2k+1 = lo/hi of (Xk, Xk+4).
	MOVO       X0, X8
	PUNPCKLQDQ X4, X8
	MOVO       X0, X9
	PUNPCKHQDQ X4, X9
	MOVO       X1, X10
	PUNPCKLQDQ X5, X10
	MOVO       X1, X11
	PUNPCKHQDQ X5, X11
	MOVO       X2, X12
	PUNPCKLQDQ X6, X12
	MOVO       X2, X13
	PUNPCKHQDQ X6, X13
	MOVO       X3, X14
	PUNPCKLQDQ X7, X14
	MOVO       X3, X15
	PUNPCKHQDQ X7, X15

	MOVQ  0(R8), DX
	MOVOU X8, (DX)(CX*1)
	MOVQ  8(R8), DX
	MOVOU X9, (DX)(CX*1)
	MOVQ  16(R8), DX
	MOVOU X10, (DX)(CX*1)
	MOVQ  24(R8), DX
	MOVOU X11, (DX)(CX*1)
	MOVQ  32(R8), DX
	MOVOU X12, (DX)(CX*1)
	MOVQ  40(R8), DX
	MOVOU X13, (DX)(CX*1)
	MOVQ  48(R8), DX
	MOVOU X14, (DX)(CX*1)
	MOVQ  56(R8), DX
	MOVOU X15, (DX)(CX*1)
	ADDQ  $128, SI
	ADDQ  $16, CX
	CMPQ  CX, AX
	JB    loop8
	RET
