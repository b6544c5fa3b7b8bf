package bench

import (
	"fmt"
	"syscall"
	"time"
)

// What new memory costs on this machine. A first read through a mount
// fills the kernel's page cache with decoded chunks, pages the machine
// may never have handed out before, where a reader decoding itself reuses
// the buffers of its heap. In some VMs the host backs the guest's memory
// only when it is first touched, and takes back what the guest left free
// (free page reporting): on the 2-core VM of docs/performance.md the first
// touch of a MiB cost 3-4 ms, touching it again 0.4 ms. So the report
// says what it costs here, at the start and at the end of a run.

// A MemCost is what touching size bytes of new memory cost, per MiB: the
// first time (pages the process has not had) and at once again (the same
// amount, just given back, which the kernel hands out again).
type MemCost struct {
	Size         int64
	First, Again time.Duration // per MiB
}

// MeasureMemCost maps size bytes of anonymous memory, writes a byte to
// each page, unmaps it, and does it again.
func MeasureMemCost(size int64) (MemCost, error) {
	c := MemCost{Size: size}
	for i, d := range []*time.Duration{&c.First, &c.Again} {
		t, err := touch(size)
		if err != nil {
			return c, fmt.Errorf("bench: memory cost, pass %d: %w", i+1, err)
		}
		*d = t * (1 << 20) / time.Duration(size)
	}
	return c, nil
}

// touch maps size bytes, writes one byte a page, and unmaps them; it
// returns the time the writes took.
func touch(size int64) (time.Duration, error) {
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return 0, err
	}
	defer syscall.Munmap(b)
	page := syscall.Getpagesize()
	t := time.Now()
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	return time.Since(t), nil
}

func (c MemCost) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1e3) }
	return fmt.Sprintf("a MiB of new memory (%d MiB touched a page at a time) %s the first time, %s again at once",
		c.Size>>20, ms(c.First), ms(c.Again))
}
