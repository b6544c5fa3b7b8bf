package codec

import (
	"bytes"
	"errors"
	"testing"
)

func TestByteSwap(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	for _, tc := range []struct {
		size int
		want []byte
	}{
		{1, src},
		{2, []byte{2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15}},
		{4, []byte{4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9, 16, 15, 14, 13}},
		{8, []byte{8, 7, 6, 5, 4, 3, 2, 1, 16, 15, 14, 13, 12, 11, 10, 9}},
		{16, []byte{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
	} {
		s := ByteSwap{tc.size}
		got, err := s.Decode(make([]byte, 0, len(src)), src)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("ByteSwap{%d}: %v, %v; want %v", tc.size, got, err, tc.want)
		}
		back, _ := s.Decode(make([]byte, 0, len(src)), got)
		if !bytes.Equal(back, src) {
			t.Errorf("ByteSwap{%d} twice: %v", tc.size, back)
		}
		if _, err := s.Decode(make([]byte, 0, len(src)-1), src); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ByteSwap{%d} with a byte too little room: %v, want ErrTooLarge", tc.size, err)
		}
	}
	if _, err := (ByteSwap{4}).Decode(make([]byte, 0, 8), src[:6]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ByteSwap{4} of 6 bytes: %v, want ErrCorrupt", err)
	}
	// In a pipeline, after a stage whose output it sizes.
	p := Chain(Raw{}, ByteSwap{2})
	if got, err := DecodeFull(p, make([]byte, 0, 4), []byte{1, 2, 3, 4}); err != nil || !bytes.Equal(got, []byte{2, 1, 4, 3}) {
		t.Errorf("Chain(Raw, ByteSwap{2}): %v, %v", got, err)
	}
}

func BenchmarkByteSwap(b *testing.B) {
	for _, size := range []int{2, 4, 8} {
		src := make([]byte, 1<<20)
		dst := make([]byte, 0, len(src))
		b.Run(string(rune('0'+size)), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = ByteSwap{size}.Decode(dst[:0], src)
			}
		})
	}
}
