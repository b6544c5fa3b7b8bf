package codec

import "golang.org/x/sys/unix"

// A PoolOption configures a Pool.
type PoolOption func(*Pool)

// WithPrefault makes the pool's decoders (Batch, not EncoderBatch) map the
// whole of dst into memory with one madvise(MADV_POPULATE_WRITE) before
// decoding into it. A decoded chunk is usually fresh memory (the decoded
// tier keeps it), and touching it page by page costs a page fault per
// 4 KiB: on the 2-core VM of docs/performance.md those faults cost about
// as much as the decoding; populating the range in one call roughly halves
// them. Where the kernel lacks it (before Linux 5.14) the call fails and
// nothing changes. It runs on the pool's workers, so the faults are taken
// in parallel too.
func WithPrefault() PoolOption { return func(p *Pool) { p.prefault = true } }

// prefault is the Decoder that WithPrefault wraps each decoder in.
type prefault struct{ d Decoder }

func (p prefault) Decode(dst, src []byte) ([]byte, error) {
	if c := cap(dst); c >= 64<<10 {
		_ = unix.Madvise(dst[:c], unix.MADV_POPULATE_WRITE)
	}
	return p.d.Decode(dst, src)
}
