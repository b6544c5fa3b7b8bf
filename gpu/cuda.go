package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// A minimal CUDA driver API shim, loaded at run time with purego (no cgo,
// no CUDA headers at build time). Only the calls zfuse needs are bound.
// Where cuda.h maps a name to a versioned symbol (#define cuMemAlloc
// cuMemAlloc_v2), the versioned symbol is bound, as a C program compiled
// against the header would call it.
//
// Types follow cuda.h on 64-bit Linux: CUresult and CUdevice are 32-bit
// ints, CUdeviceptr is a 64-bit integer, handles (CUcontext, CUmodule,
// CUfunction, CUstream, CUevent) are pointers, carried here as uintptr
// because Go never dereferences them.

// cuResult is a CUresult.
type cuResult uint32

// CUresult values the host code acts on.
const (
	cudaSuccess          cuResult = 0
	cudaErrorNoDevice    cuResult = 100
	cudaErrorNotReady    cuResult = 600
	cudaErrorStubLibrary cuResult = 34
)

// CUdevice_attribute values used.
const (
	attrMultiprocessorCount = 16
	attrComputeCapMajor     = 75
	attrComputeCapMinor     = 76
)

// driver holds the bound entry points of one loaded libcuda. The function
// fields are set once by loadDriver and never change; calls are safe from
// any goroutine (the driver API is thread-safe; the current context is per
// OS thread, see Decoder).
type driver struct {
	path string
	lib  uintptr

	cuInit                    func(flags uint32) cuResult
	cuDriverGetVersion        func(v *int32) cuResult
	cuGetErrorString          func(r cuResult, s **byte) cuResult
	cuGetErrorName            func(r cuResult, s **byte) cuResult
	cuDeviceGetCount          func(n *int32) cuResult
	cuDeviceGet               func(dev *int32, ordinal int32) cuResult
	cuDeviceGetName           func(name *byte, n int32, dev int32) cuResult
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) cuResult
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) cuResult
	cuDevicePrimaryCtxRelease func(dev int32) cuResult
	cuCtxSetCurrent           func(ctx uintptr) cuResult
	cuModuleLoadData          func(mod *uintptr, image *byte) cuResult
	cuModuleUnload            func(mod uintptr) cuResult
	cuModuleGetFunction       func(fn *uintptr, mod uintptr, name string) cuResult
	cuMemAlloc                func(p *uint64, n uintptr) cuResult
	cuMemFree                 func(p uint64) cuResult
	cuMemAllocHost            func(p *unsafe.Pointer, n uintptr) cuResult
	cuMemFreeHost             func(p unsafe.Pointer) cuResult
	cuMemcpyHtoDAsync         func(dst uint64, src unsafe.Pointer, n uintptr, stream uintptr) cuResult
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uint64, n uintptr, stream uintptr) cuResult
	cuStreamCreate            func(s *uintptr, flags uint32) cuResult
	cuStreamDestroy           func(s uintptr) cuResult
	cuStreamSynchronize       func(s uintptr) cuResult
	cuEventCreate             func(e *uintptr, flags uint32) cuResult
	cuEventRecord             func(e uintptr, s uintptr) cuResult
	cuEventSynchronize        func(e uintptr) cuResult
	cuEventElapsedTime        func(ms *float32, start, end uintptr) cuResult
	cuEventDestroy            func(e uintptr) cuResult
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) cuResult
}

// Flags.
const (
	streamNonBlocking = 0x1 // CU_STREAM_NON_BLOCKING: no sync with the legacy default stream
	eventDefault      = 0x0
)

// symbol is one entry point: the names to try in order (versioned first)
// and where to bind it.
type symbol struct {
	names []string
	fptr  any
}

// loadDriver opens the library at path and binds cuInit and the error
// functions only; bindAll binds the rest once cuInit has succeeded, so that
// a library that cannot even initialise reports that, not a missing symbol.
func loadDriver(path string) (*driver, error) {
	// purego.Dlopen asks dlerror for the reason after a failed dlopen;
	// glibc keeps it per thread, so both must run on one: unlocked, the
	// goroutine can move between them and the reason comes back empty
	// (seen under load: "cannot load libcuda.so.1: ").
	runtime.LockOSThread()
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	runtime.UnlockOSThread()
	if err != nil {
		return nil, absentErr(err, "cannot load %s: %v", path, err)
	}
	d := &driver{path: path, lib: lib}
	if err := d.bind([]symbol{
		{[]string{"cuInit"}, &d.cuInit},
		{[]string{"cuGetErrorString"}, &d.cuGetErrorString},
		{[]string{"cuGetErrorName"}, &d.cuGetErrorName},
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// bindAll binds every other entry point.
func (d *driver) bindAll() error {
	return d.bind([]symbol{
		{[]string{"cuDriverGetVersion"}, &d.cuDriverGetVersion},
		{[]string{"cuDeviceGetCount"}, &d.cuDeviceGetCount},
		{[]string{"cuDeviceGet"}, &d.cuDeviceGet},
		{[]string{"cuDeviceGetName"}, &d.cuDeviceGetName},
		{[]string{"cuDeviceGetAttribute"}, &d.cuDeviceGetAttribute},
		{[]string{"cuDevicePrimaryCtxRetain"}, &d.cuDevicePrimaryCtxRetain},
		{[]string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, &d.cuDevicePrimaryCtxRelease},
		{[]string{"cuCtxSetCurrent"}, &d.cuCtxSetCurrent},
		{[]string{"cuModuleLoadData"}, &d.cuModuleLoadData},
		{[]string{"cuModuleUnload"}, &d.cuModuleUnload},
		{[]string{"cuModuleGetFunction"}, &d.cuModuleGetFunction},
		{[]string{"cuMemAlloc_v2"}, &d.cuMemAlloc},
		{[]string{"cuMemFree_v2"}, &d.cuMemFree},
		{[]string{"cuMemAllocHost_v2"}, &d.cuMemAllocHost},
		{[]string{"cuMemFreeHost"}, &d.cuMemFreeHost},
		{[]string{"cuMemcpyHtoDAsync_v2"}, &d.cuMemcpyHtoDAsync},
		{[]string{"cuMemcpyDtoHAsync_v2"}, &d.cuMemcpyDtoHAsync},
		{[]string{"cuStreamCreate"}, &d.cuStreamCreate},
		{[]string{"cuStreamDestroy_v2", "cuStreamDestroy"}, &d.cuStreamDestroy},
		{[]string{"cuStreamSynchronize"}, &d.cuStreamSynchronize},
		{[]string{"cuEventCreate"}, &d.cuEventCreate},
		{[]string{"cuEventRecord"}, &d.cuEventRecord},
		{[]string{"cuEventSynchronize"}, &d.cuEventSynchronize},
		// CUDA 12.8 added cuEventElapsedTime_v2 (same signature) and CUDA 13's
		// header maps the plain name to it; older drivers have only the plain one.
		{[]string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &d.cuEventElapsedTime},
		{[]string{"cuEventDestroy_v2", "cuEventDestroy"}, &d.cuEventDestroy},
		{[]string{"cuLaunchKernel"}, &d.cuLaunchKernel},
	})
}

func (d *driver) bind(syms []symbol) error {
	for _, s := range syms {
		var addr uintptr
		for _, n := range s.names {
			if a, err := purego.Dlsym(d.lib, n); err == nil && a != 0 {
				addr = a
				break
			}
		}
		if addr == 0 {
			return unavailableErr(nil, "%s has no symbol %s", d.path, s.names[0])
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return nil
}

// A cudaError is a failed driver call.
type cudaError struct {
	call string
	code cuResult
	name string // CUDA_ERROR_...
	text string
}

func (e *cudaError) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.call, e.name, e.code, e.text)
}

// check turns a CUresult into an error naming the call, or nil.
func (d *driver) check(call string, r cuResult) error {
	if r == cudaSuccess {
		return nil
	}
	e := &cudaError{call: call, code: r, name: "CUDA_ERROR_UNKNOWN_CODE", text: "unknown error"}
	var p *byte
	if d.cuGetErrorName != nil && d.cuGetErrorName(r, &p) == cudaSuccess && p != nil {
		e.name = cString(p)
	}
	p = nil
	if d.cuGetErrorString != nil && d.cuGetErrorString(r, &p) == cudaSuccess && p != nil {
		e.text = cString(p)
	}
	return e
}

// cudaCode returns the CUresult inside err, if any.
func cudaCode(err error) (cuResult, bool) {
	var e *cudaError
	if errors.As(err, &e) {
		return e.code, true
	}
	return 0, false
}

// cString copies the NUL-terminated C string at p (owned by the driver).
func cString(p *byte) string {
	var n int
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
