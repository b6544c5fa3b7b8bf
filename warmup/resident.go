package warmup

import (
	"errors"
	"io/fs"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Resident returns the bytes of files in the page cache and the fraction
// of their pages that is (mincore over a read-only mapping of each):
// where later reads find them without asking zfuse. Missing files, chunks
// read as their fill value, have none.
func Resident(files []string) (int64, float64, error) {
	var in, all int
	var held int64
	for _, p := range files {
		n, pages, total, err := resident(p)
		if err != nil {
			return 0, 0, err
		}
		held, in, all = held+n, in+pages, all+total
	}
	if all == 0 {
		return 0, 0, nil
	}
	return held, float64(in) / float64(all), nil
}

// resident returns the bytes and the pages of the file at p in the page
// cache, and its pages.
func resident(p string) (held int64, in, all int, err error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, 0, nil // a missing chunk: its fill value, no pages
	}
	if err != nil {
		return 0, 0, 0, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		f.Close()
		return 0, 0, 0, nil
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (int64(len(m))+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, 0, 0, errno
	}
	for i, v := range vec {
		if v&1 != 0 {
			in++
			held += min(page, fi.Size()-int64(i)*page) // the last page holds the file's end
		}
	}
	return held, in, len(vec), nil
}
