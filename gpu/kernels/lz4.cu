// zf_lz4: warp-per-stream LZ4 block decoder.
//
// Each warp decodes one independent stream (struct zf_stream). All 32 lanes
// parse the sequence headers redundantly (the loads are the same address, so
// they are broadcast), which keeps every lane's control flow identical and
// needs no shuffles; the lanes then copy literals and matches in parallel.
//
// Semantics (the sequential form is gpu/emulate.go; both must stay equal):
//   - an empty input is an error (ZF_ERR_SIZE unless dst_len is 0);
//   - a sequence is: token, literal length (15 => add bytes while 255),
//     literals, then unless the input ends: 2-byte LE offset (0 is an error,
//     past the start of the output is an error), match length (token low
//     nibble + 4; 15 => add bytes while 255);
//   - the input may end right after literals only if the token's match
//     nibble is 0, or right after a match (as pierrec/lz4 accepts);
//   - output must be exactly dst_len bytes; nothing is written at or past
//     dst_off + dst_len, nothing is read at or past src_off + src_len.
// Overlapping matches copy with period `off`: byte k of the match is
// out[di - off + k % off], so every lane reads only bytes written before the
// match started and the copy needs no ordering inside the match.
#include "zfuse.h"

typedef unsigned char u8;
typedef unsigned int u32;

__device__ __forceinline__ u32 ld(const u8* __restrict__ p, u32 i) { return __ldg(p + i); }

__device__ int zf_lz4_warp(const u8* __restrict__ src, u32 slen, u8* dst, u32 dlen, u32 lane) {
  if (slen == 0) return dlen == 0 ? ZF_OK : ZF_ERR_SIZE;
  u32 si = 0, di = 0;
  while (si < slen) {
    u32 token = ld(src, si++);
    u32 lit = token >> 4;
    if (lit == 15) {
      u32 x;
      do {
        if (si >= slen) return ZF_ERR_SRC;
        x = ld(src, si++);
        lit += x;
        if (lit > dlen) return ZF_ERR_DST;  // also stops overflow of lit
      } while (x == 255);
    }
    if (lit > 0) {
      if (lit > slen - si) return ZF_ERR_SRC;
      if (lit > dlen - di) return ZF_ERR_DST;
      for (u32 k = lane; k < lit; k += 32) dst[di + k] = ld(src, si + k);
      si += lit;
      di += lit;
    }
    if (si == slen) {
      if ((token & 15) == 0) break;
      return ZF_ERR_SRC;
    }
    if (slen - si < 2) return ZF_ERR_SRC;
    u32 off = ld(src, si) | (ld(src, si + 1) << 8);
    si += 2;
    if (off == 0) return ZF_ERR_OFFSET;
    u32 ml = (token & 15) + 4;
    if ((token & 15) == 15) {
      u32 x;
      do {
        if (si >= slen) return ZF_ERR_SRC;
        x = ld(src, si++);
        ml += x;
        if (ml > dlen) return ZF_ERR_DST;
      } while (x == 255);
    }
    if (off > di) return ZF_ERR_OFFSET;
    if (ml > dlen - di) return ZF_ERR_DST;
    __syncwarp();  // earlier literal and match bytes are visible to every lane
    const u8* m = dst + di - off;
    if (off >= ml) {
      for (u32 k = lane; k < ml; k += 32) dst[di + k] = m[k];
    } else {
      for (u32 k = lane; k < ml; k += 32) dst[di + k] = m[k % off];
    }
    di += ml;
    __syncwarp();
  }
  return di == dlen ? ZF_OK : ZF_ERR_SIZE;
}

__device__ int zf_stored_warp(const u8* __restrict__ src, u32 slen, u8* dst, u32 dlen, u32 lane) {
  if (slen != dlen) return ZF_ERR_SIZE;
  for (u32 k = lane; k < slen; k += 32) dst[k] = ld(src, k);
  return ZF_OK;
}

// zf_lz4 decodes streams[0..n) from src into dst. blockDim.x must be a
// multiple of 32; warp w of the grid takes stream w.
extern "C" __global__ void __launch_bounds__(128)
zf_lz4(struct zf_stream* streams, u32 n, const u8* __restrict__ src, u8* dst) {
  u32 w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  u32 lane = threadIdx.x & 31;
  if (w >= n) return;  // uniform across the warp
  struct zf_stream d = streams[w];
  int st;
  switch (d.kind) {
    case ZF_KIND_LZ4:
      st = zf_lz4_warp(src + d.src_off, d.src_len, dst + d.dst_off, d.dst_len, lane);
      break;
    case ZF_KIND_STORED:
      st = zf_stored_warp(src + d.src_off, d.src_len, dst + d.dst_off, d.dst_len, lane);
      break;
    default:
      st = ZF_ERR_KIND;
  }
  if (lane == 0) streams[w].status = st;
}
