// Descriptors shared by the host (gpu/layout.go) and the kernels. The host
// writes them little-endian into one flat array; field order and sizes here
// must match layout.go exactly (both are 32 bytes, no implicit padding).
#ifndef ZFUSE_KERNELS_H
#define ZFUSE_KERNELS_H

// One independent LZ4 stream (a numcodecs LZ4 chunk, or one Blosc split).
// src_off/src_len index the batch's concatenated input; dst_off/dst_len the
// batch's stage buffer. The kernel writes status; the host presets it to
// ZF_NOT_RUN so that a stream no warp reached reads as an error.
struct zf_stream {
  unsigned long long src_off;
  unsigned long long dst_off;
  unsigned int src_len;
  unsigned int dst_len;
  int status;
  unsigned int kind;  // ZF_KIND_*
};

// One Blosc block to unshuffle from the stage buffer into the output buffer.
struct zf_block {
  unsigned long long src_off;  // in the stage buffer
  unsigned long long dst_off;  // in the output buffer
  unsigned int len;            // block size in bytes
  unsigned int typesize;       // 1..255
  unsigned int mode;           // ZF_MODE_*
  unsigned int pad;
};

#define ZF_KIND_LZ4 0     // raw LZ4 block, must decode to exactly dst_len bytes
#define ZF_KIND_STORED 1  // stored bytes (a Blosc split with csize == neblock)

#define ZF_MODE_COPY 0  // no shuffle
#define ZF_MODE_BYTE 1  // c-blosc 1.x byte unshuffle
#define ZF_MODE_BIT 2   // c-blosc 1.x bit unshuffle

#define ZF_OK 0
#define ZF_ERR_SRC 1     // input ends inside a sequence
#define ZF_ERR_DST 2     // output would pass dst_len
#define ZF_ERR_OFFSET 3  // match offset 0 or before the start of the output
#define ZF_ERR_SIZE 4    // decoded fewer bytes than dst_len (or stored size differs)
#define ZF_ERR_KIND 5    // unknown kind
#define ZF_NOT_RUN (-1)  // preset by the host

#endif
