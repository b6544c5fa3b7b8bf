// zf_unshuffle: per-block byte and bit unshuffle with c-blosc 1.x semantics
// (zarr-formats.md §1.5), from the stage buffer into the output buffer.
//
// Grid: x = block index, y = parts of a block; each thread strides over its
// block's work items by blockDim.x * gridDim.y.
//   COPY: out = in.
//   BYTE: n = len / ts elements; out[i*ts + j] = in[j*n + i]; the len - n*ts
//         tail bytes are copied verbatim. ts <= 1 is a copy.
//   BIT:  if n % 8 != 0 (or n == 0) the block was never bit-shuffled: copy.
//         Else the first n*ts bytes are 8*ts bit planes of n/8 bytes; plane
//         8*j + k holds bit k of byte j of every element, element i being bit
//         i % 8 of plane byte i / 8. One work item is (byte j, group g of 8
//         elements): it loads the 8 plane bytes, transposes the 8x8 bit
//         matrix and stores byte j of elements 8g..8g+7. Tail bytes verbatim.
// The sequential form is gpu/emulate.go; both must stay equal.
#include "zfuse.h"

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// zf_transpose8 transposes the 8x8 bit matrix whose row r is byte r of x and
// whose column c is bit c of that byte (Hacker's Delight 7-3).
__device__ __forceinline__ u64 zf_transpose8(u64 x) {
  u64 t;
  t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x = x ^ t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x = x ^ t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x = x ^ t ^ (t << 28);
  return x;
}

extern "C" __global__ void __launch_bounds__(256)
zf_unshuffle(const struct zf_block* blocks, u32 n, const u8* __restrict__ src, u8* __restrict__ dst) {
  if (blockIdx.x >= n) return;
  struct zf_block b = blocks[blockIdx.x];
  const u8* __restrict__ in = src + b.src_off;
  u8* __restrict__ out = dst + b.dst_off;
  u32 tid = blockIdx.y * blockDim.x + threadIdx.x;
  u32 stride = gridDim.y * blockDim.x;
  u32 len = b.len, ts = b.typesize, mode = b.mode;
  u32 ne = ts > 0 ? len / ts : 0;
  if (mode == ZF_MODE_BYTE && ts <= 1) mode = ZF_MODE_COPY;
  if (mode == ZF_MODE_BIT && (ts == 0 || ne == 0 || ne % 8 != 0)) mode = ZF_MODE_COPY;
  if (mode != ZF_MODE_BYTE && mode != ZF_MODE_BIT) mode = ZF_MODE_COPY;

  u32 body = 0;
  if (mode == ZF_MODE_BYTE) {
    body = ne * ts;
    for (u32 i = tid; i < body; i += stride) {
      u32 e = i / ts, j = i - e * ts;
      out[i] = __ldg(in + (size_t)j * ne + e);
    }
  } else if (mode == ZF_MODE_BIT) {
    body = ne * ts;
    u32 nb = ne / 8;  // bytes per plane
    u32 work = nb * ts;
    for (u32 w = tid; w < work; w += stride) {
      u32 j = w / nb, g = w - j * nb;
      const u8* p = in + (size_t)(8 * j) * nb + g;
      u64 x = 0;
#pragma unroll
      for (u32 k = 0; k < 8; k++) x |= (u64)__ldg(p + (size_t)k * nb) << (8 * k);
      x = zf_transpose8(x);
      u8* o = out + (size_t)(8 * g) * ts + j;
#pragma unroll
      for (u32 e = 0; e < 8; e++) o[(size_t)e * ts] = (u8)(x >> (8 * e));
    }
  }
  for (u32 i = body + tid; i < len; i += stride) out[i] = __ldg(in + i);
}
