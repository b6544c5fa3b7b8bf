package codec

import (
	"bytes"
	"context"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentDecoder copies src to dst after counting how many pages of
// dst's capacity are in memory when it starts.
type residentDecoder struct{ pages *int }

func (r residentDecoder) Decode(dst, src []byte) ([]byte, error) {
	c := dst[:cap(dst)]
	vec := make([]byte, (len(c)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&c[0])), uintptr(len(c)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return nil, e
	}
	for _, v := range vec {
		*r.pages += int(v & 1)
	}
	return append(dst, src...), nil
}

// TestPoolPrefault: a pool WithPrefault hands its decoders a dst whose
// pages are all in memory; a plain pool hands them over untouched. Both
// decode the same bytes.
func TestPoolPrefault(t *testing.T) {
	const size = 1 << 20
	probe, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Madvise(probe, unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("no MADV_POPULATE_WRITE (Linux 5.14): %v", err)
	}
	unix.Munmap(probe)
	src := bytes.Repeat([]byte("zfuse"), size/5)
	for _, tc := range []struct {
		name string
		opts []PoolOption
		want int // pages of dst in memory when the decoder starts
	}{
		{"plain", nil, 0},
		{"prefault", []PoolOption{WithPrefault()}, size / os.Getpagesize()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(m)
			p := NewPool(1, tc.opts...)
			defer p.Close()
			pages := 0
			jobs := []Job{{Src: src, Dst: m[:0:size]}}
			if err := p.Batch(residentDecoder{&pages}).DecodeBatch(context.Background(), jobs); err != nil {
				t.Fatal(err)
			}
			if jobs[0].Err != nil || !bytes.Equal(jobs[0].Dst, src) {
				t.Fatalf("decoded %d bytes, err %v; want the %d bytes of src", len(jobs[0].Dst), jobs[0].Err, len(src))
			}
			if pages != tc.want {
				t.Errorf("%d pages of dst in memory before decoding, want %d", pages, tc.want)
			}
		})
	}
}
