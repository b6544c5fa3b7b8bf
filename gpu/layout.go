package gpu

import (
	"encoding/binary"
	"fmt"

	"github.com/zfuse/zfuse/codec"
)

// This file turns a batch of jobs into what the kernels read: a flat array
// of LZ4 stream descriptors, a flat array of block descriptors for the
// unshuffle kernel, and one concatenated input buffer. It is pure host code;
// the layouts match gpu/kernels/zfuse.h byte for byte.

// Descriptor layout (gpu/kernels/zfuse.h). Both structs are 32 bytes.
const (
	descSize = 32

	kindLZ4    = 0 // ZF_KIND_LZ4
	kindStored = 1 // ZF_KIND_STORED

	modeCopy = 0 // ZF_MODE_COPY
	modeByte = 1 // ZF_MODE_BYTE
	modeBit  = 2 // ZF_MODE_BIT

	statusOK     = 0  // ZF_OK
	statusSrc    = 1  // ZF_ERR_SRC
	statusDst    = 2  // ZF_ERR_DST
	statusOffset = 3  // ZF_ERR_OFFSET
	statusSize   = 4  // ZF_ERR_SIZE
	statusKind   = 5  // ZF_ERR_KIND
	statusNotRun = -1 // ZF_NOT_RUN, preset by the host

	// align is the alignment of each region in the staging buffers.
	align = 256
)

// statusText explains a kernel status code in an error message.
func statusText(st int32) string {
	switch st {
	case statusSrc:
		return "input ends inside a sequence"
	case statusDst:
		return "output longer than expected"
	case statusOffset:
		return "match offset out of range"
	case statusSize:
		return "output shorter than expected"
	case statusKind:
		return "unknown stream kind"
	case statusNotRun:
		return "stream not decoded"
	}
	return fmt.Sprintf("status %d", st)
}

// A stream is one independent LZ4 (or stored) stream of a job, with offsets
// relative to the job: src into the bytes the job copies to the device
// (jobPlan.src), dst into the job's decoded bytes.
type stream struct {
	srcOff, srcLen int
	dstOff, dstLen int
	kind           uint32
}

// A block is one Blosc block to unshuffle, relative to the job's output.
type block struct {
	off, len int
	typesize int
	mode     uint32
}

// A jobPlan is how one GPU-eligible job decodes: which bytes go to the
// device, the streams within them, and the blocks to unshuffle (none when
// the job's output is the streams' output as it is).
type jobPlan struct {
	job     int    // index into the batch
	src     []byte // the bytes to copy to the device (a sub-slice of Job.Src)
	out     int    // decoded size
	streams []stream
	blocks  []block // nil: no unshuffle
}

// pipelineKind says which single-stage decoder a batch decodes.
type pipelineKind int

const (
	pipeNone  pipelineKind = iota
	pipeLZ4                // numcodecs LZ4: u32le size + one LZ4 block
	pipeBlosc              // c-blosc 1.x with the lz4 (or lz4hc) compressor
)

// planJob parses job's source and returns its plan, or ok == false when the
// job must be decoded on the CPU: not the expected format, malformed in any
// way the host can see, larger than cap(Dst) or maxOut, a memcpyed or empty
// Blosc buffer, or a Blosc compressor without a GPU kernel. The CPU decoder
// then produces exactly the result (or error) the caller would get without
// a GPU, so the host never needs to invent an error of its own.
func planJob(kind pipelineKind, i int, j *codec.Job, maxOut int) (jobPlan, bool) {
	switch kind {
	case pipeLZ4:
		return planLZ4(i, j, maxOut)
	case pipeBlosc:
		return planBlosc(i, j, maxOut)
	}
	return jobPlan{}, false
}

func planLZ4(i int, j *codec.Job, maxOut int) (jobPlan, bool) {
	if len(j.Src) < 4 {
		return jobPlan{}, false
	}
	n := binary.LittleEndian.Uint32(j.Src)
	if n == 0 || int64(n) > int64(cap(j.Dst)) || int64(n) > int64(maxOut) || len(j.Src)-4 > maxStreamLen {
		return jobPlan{}, false
	}
	src := j.Src[4:]
	return jobPlan{
		job: i, src: src, out: int(n),
		streams: []stream{{srcLen: len(src), dstLen: int(n), kind: kindLZ4}},
	}, true
}

// maxStreamLen bounds the u32 length fields of a descriptor.
const maxStreamLen = 1<<31 - 1

func planBlosc(i int, j *codec.Job, maxOut int) (jobPlan, bool) {
	h, err := codec.ParseBlosc(j.Src)
	if err != nil || h.Nbytes == 0 || h.Memcpyed() || h.Compressor() != "lz4" ||
		h.Nbytes > cap(j.Dst) || h.Nbytes > maxOut {
		return jobPlan{}, false
	}
	bs, err := codec.BloscStreams(j.Src)
	if err != nil || len(bs) == 0 {
		return jobPlan{}, false
	}
	p := jobPlan{job: i, src: j.Src[:h.Cbytes], out: h.Nbytes, streams: make([]stream, len(bs))}
	for k, s := range bs {
		kind := uint32(kindLZ4)
		if s.Stored {
			kind = kindStored
		}
		p.streams[k] = stream{srcOff: s.SrcOff, srcLen: s.SrcLen, dstOff: s.DstOff, dstLen: s.DstLen, kind: kind}
	}
	mode := uint32(modeCopy)
	switch h.Shuffle() {
	case codec.BloscByteShuffle:
		mode = modeByte
	case codec.BloscBitShuffle:
		mode = modeBit
	}
	if mode != modeCopy {
		nb := h.NBlocks()
		p.blocks = make([]block, nb)
		for b := range nb {
			size, _ := h.Block(b)
			m := mode
			if m == modeBit && size < h.Typesize {
				m = modeCopy // codec: a bit-shuffled block shorter than typesize is stored as is
			}
			p.blocks[b] = block{off: b * h.Blocksize, len: size, typesize: h.Typesize, mode: m}
		}
	}
	return p, true
}

// A slice is a run of job plans decoded by one launch of each kernel. Its
// layout in the input staging buffer is [stream descriptors | block
// descriptors | source bytes], each region aligned; in the output staging
// buffer it is [stream descriptors (statuses come back) | decoded bytes].
// Per job, the offsets of its pieces are precomputed so that jobs can be
// packed and scattered in parallel.
type slice struct {
	jobs     []jobPlan
	srcAt    []int // per job: offset of its source bytes in the source region
	outAt    []int // per job: offset of its output in the decoded region
	streamAt []int // per job: index of its first stream descriptor
	blockAt  []int // per job: index of its first block descriptor (when shuffle)
	streams  int   // number of stream descriptors
	blocks   int   // number of block descriptors (0: no unshuffle launch)
	maxBlock int   // longest block, for the unshuffle grid
	srcLen   int   // bytes in the source region
	outLen   int   // bytes in the decoded region
	shuffle  bool  // some block needs an unshuffle
}

// Region offsets in the input staging buffer.
func (s *slice) blkOff() int  { return alignUp(s.streams * descSize) }
func (s *slice) srcOff() int  { return s.blkOff() + alignUp(s.blocks*descSize) }
func (s *slice) inLen() int   { return s.srcOff() + s.srcLen }
func (s *slice) outOff() int  { return alignUp(s.streams * descSize) }
func (s *slice) outSize() int { return s.outOff() + s.outLen }

func alignUp(n int) int { return (n + align - 1) &^ (align - 1) }

// inNeed and outNeed bound what one job adds to a slice's staging buffers,
// counting a block descriptor for a job without shuffle (one copy block) in
// case the slice has shuffled jobs too, and the alignment of each region.
func inNeed(p *jobPlan) int {
	nb := max(len(p.blocks), 1)
	return (len(p.streams)+nb)*descSize + alignUp(len(p.src)) + 2*align
}
func outNeed(p *jobPlan) int { return len(p.streams)*descSize + alignUp(p.out) + align }

// sliceJobs groups plans, in order, into slices whose staging needs fit
// inCap and outCap bytes. Each plan must fit on its own.
func sliceJobs(plans []jobPlan, inCap, outCap int) []*slice {
	var out []*slice
	var cur *slice
	in, o := 0, 0
	for _, p := range plans {
		ni, no := inNeed(&p), outNeed(&p)
		if cur == nil || in+ni > inCap || o+no > outCap {
			cur = &slice{}
			out = append(out, cur)
			in, o = 0, 0
		}
		in += ni
		o += no
		cur.add(p)
	}
	for _, s := range out {
		s.finish()
	}
	return out
}

func (s *slice) add(p jobPlan) {
	s.jobs = append(s.jobs, p)
	s.srcAt = append(s.srcAt, s.srcLen)
	s.outAt = append(s.outAt, s.outLen)
	s.streamAt = append(s.streamAt, s.streams)
	s.srcLen += alignUp(len(p.src))
	s.outLen += alignUp(p.out)
	s.streams += len(p.streams)
	if p.blocks != nil {
		s.shuffle = true
	}
}

// finish counts the block descriptors: with any shuffled job, every job
// gets blocks (unshuffled ones a single copy block), because the unshuffle
// kernel then writes the whole output buffer.
func (s *slice) finish() {
	s.blocks, s.maxBlock = 0, 0
	s.blockAt = make([]int, len(s.jobs))
	if !s.shuffle {
		return
	}
	for i := range s.jobs {
		p := &s.jobs[i]
		s.blockAt[i] = s.blocks
		if p.blocks == nil {
			s.blocks++
			s.maxBlock = max(s.maxBlock, p.out)
			continue
		}
		s.blocks += len(p.blocks)
		for _, b := range p.blocks {
			s.maxBlock = max(s.maxBlock, b.len)
		}
	}
}

// pack writes the descriptors and source bytes of jobs [from, to) into in,
// which holds at least s.inLen() bytes. Stream statuses are preset to
// statusNotRun. Disjoint ranges may be packed concurrently.
func (s *slice) pack(in []byte, from, to int) {
	le := binary.LittleEndian
	d := in[:s.streams*descSize]
	b := in[s.blkOff() : s.blkOff()+s.blocks*descSize]
	src := in[s.srcOff():s.inLen()]
	for i := from; i < to; i++ {
		p := &s.jobs[i]
		base, out := s.srcAt[i], s.outAt[i]
		copy(src[base:], p.src)
		for k, st := range p.streams {
			e := d[(s.streamAt[i]+k)*descSize:][:descSize]
			le.PutUint64(e[0:], uint64(base+st.srcOff))
			le.PutUint64(e[8:], uint64(out+st.dstOff))
			le.PutUint32(e[16:], uint32(st.srcLen))
			le.PutUint32(e[20:], uint32(st.dstLen))
			le.PutUint32(e[24:], notRun)
			le.PutUint32(e[28:], st.kind)
		}
		if !s.shuffle {
			continue
		}
		blocks := p.blocks
		if blocks == nil {
			blocks = []block{{off: 0, len: p.out, typesize: 1, mode: modeCopy}}
		}
		for k, bl := range blocks {
			e := b[(s.blockAt[i]+k)*descSize:][:descSize]
			le.PutUint64(e[0:], uint64(out+bl.off))
			le.PutUint64(e[8:], uint64(out+bl.off))
			le.PutUint32(e[16:], uint32(bl.len))
			le.PutUint32(e[20:], uint32(bl.typesize))
			le.PutUint32(e[24:], bl.mode)
			le.PutUint32(e[28:], 0)
		}
	}
}

// status returns the status the kernel wrote for stream k, read from the
// output staging buffer.
func status(out []byte, k int) int32 {
	return int32(binary.LittleEndian.Uint32(out[k*descSize+24:]))
}

// jobErr returns the error of job i of the slice from the stream statuses
// in out, or nil.
func (s *slice) jobErr(out []byte, i int) error {
	p := &s.jobs[i]
	for k := range p.streams {
		if st := status(out, s.streamAt[i]+k); st != statusOK {
			return fmt.Errorf("%w: gpu: lz4 stream %d of %d: %s", codec.ErrCorrupt, k, len(p.streams), statusText(st))
		}
	}
	return nil
}

// notRun is statusNotRun (-1) in the descriptor's int32 field.
const notRun = 0xFFFFFFFF
