package uring

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newRing sets up a ring for the test's thread, or skips where the kernel
// has no io_uring (or it is disabled: kernel.io_uring_disabled).
func newRing(t *testing.T, entries uint32) *Ring {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	r, err := New(entries)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("no io_uring here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestNop: prepared entries complete with their user data, in one Enter,
// and a full queue says so.
func TestNop(t *testing.T) {
	r := newRing(t, 4)
	n := len(r.sqes)
	for i := range n {
		s, err := r.Prepare()
		if err != nil {
			t.Fatalf("Prepare %d of %d: %v", i, n, err)
		}
		s.Opcode, s.UserData = OpNop, uint64(100+i)
	}
	if _, err := r.Prepare(); !errors.Is(err, ErrFull) {
		t.Fatalf("Prepare with every entry prepared: %v, want ErrFull", err)
	}
	if err := r.Enter(uint32(n)); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	r.Reap(func(c CQE) {
		if c.Res != 0 {
			t.Errorf("NOP %d: res %d", c.UserData, c.Res)
		}
		got = append(got, c.UserData)
	})
	if len(got) != n {
		t.Fatalf("%d completions, want %d: %v", len(got), n, got)
	}
	for i, u := range got {
		if u != uint64(100+i) {
			t.Errorf("completion %d has user data %d, want %d", i, u, 100+i)
		}
	}
	// The queue is free again, and the ring keeps going past its size.
	for round := range 3 * n {
		s, err := r.Prepare()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		s.Opcode, s.UserData = OpNop, uint64(round)
		if err := r.Enter(1); err != nil {
			t.Fatal(err)
		}
		k := 0
		r.Reap(func(c CQE) { k++ })
		if k != 1 {
			t.Fatalf("round %d: %d completions, want 1", round, k)
		}
	}
}

// TestRead: a read of an eventfd completes once another thread writes it,
// and the waiting Enter returns then.
func TestRead(t *testing.T) {
	r := newRing(t, 2)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	var buf [8]byte
	s, _ := r.Prepare()
	s.Opcode, s.Fd, s.Addr, s.Len, s.UserData = OpRead, int32(efd), uint64(uintptr(unsafe.Pointer(&buf[0]))), 8, 7
	if err := r.Enter(0); err != nil {
		t.Fatal(err)
	}
	go func() {
		one := [8]byte{5}
		unix.Write(efd, one[:])
	}()
	if err := r.Enter(1); err != nil {
		t.Fatal(err)
	}
	var got []CQE
	r.Reap(func(c CQE) { got = append(got, c) })
	if len(got) != 1 || got[0].UserData != 7 || got[0].Res != 8 || buf[0] != 5 {
		t.Fatalf("completions %+v, buffer %v: want one of user data 7, 8 bytes read, the value 5", got, buf)
	}
}

// TestBadFd: a failed entry completes with a negative errno, not an
// error from Enter.
func TestBadFd(t *testing.T) {
	r := newRing(t, 2)
	var buf [8]byte
	s, _ := r.Prepare()
	s.Opcode, s.Fd, s.Addr, s.Len, s.UserData = OpRead, -1, uint64(uintptr(unsafe.Pointer(&buf[0]))), 8, 1
	if err := r.Enter(1); err != nil {
		t.Fatal(err)
	}
	var res int32 = 1
	r.Reap(func(c CQE) { res = c.Res })
	if syscall.Errno(-res) != syscall.EBADF {
		t.Fatalf("res %d, want -EBADF", res)
	}
}
