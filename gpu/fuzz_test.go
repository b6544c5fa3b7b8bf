package gpu

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zfuse/zfuse/codec"
)

// The GPU path is fuzzed against codec.Batch, as STYLE.md asks: the
// emulated kernels with the real host-side planning, packing and
// scattering. (On a GPU machine, TestDeviceAgrees covers the device.)

func FuzzBlosc(f *testing.F) {
	r := rand.New(rand.NewPCG(61, 62))
	for i, c := range goChunks(f, r, true) {
		if i%5 == 0 && len(c.src) < 64<<10 {
			f.Add(c.src)
		}
	}
	g := newEmulated(Config{SliceBytes: 1 << 20, Streams: 2})
	bd := mustBatch(f, g, codec.Blosc{})
	f.Fuzz(func(t *testing.T, src []byte) {
		room := min(max(bloscRoom(src), 0), 1<<20)
		agree(t, bd, codec.Blosc{}, []chunk{
			{name: "exact room", src: src, room: room},
			{name: "room+1", src: src, room: room + 1},
		})
	})
}

func FuzzLZ4(f *testing.F) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{1, 20, 300, 5000} {
		f.Add(encodeLZ4(f, mixedData(r, n)))
	}
	g := newEmulated(Config{SliceBytes: 1 << 20})
	bd := mustBatch(f, g, codec.LZ4{})
	f.Fuzz(func(t *testing.T, src []byte) {
		room := 0
		if len(src) >= 4 {
			room = int(min(binary.LittleEndian.Uint32(src), 1<<20))
		}
		agree(t, bd, codec.LZ4{}, []chunk{
			{name: "exact room", src: src, room: room},
			{name: "room-1", src: src, room: max(room-1, 0)},
		})
	})
}
