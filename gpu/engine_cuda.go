package gpu

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// cudaEngine runs slices on one device through the driver API.
type cudaEngine struct {
	drv       *driver
	dev       int32   // CUdevice
	ctx       uintptr // the device's primary context, retained
	mods      []uintptr
	lz4       uintptr // CUfunction zf_lz4
	unshuffle uintptr // CUfunction zf_unshuffle
}

// cudaSlot is the device side of a slot.
type cudaSlot struct {
	inP, outP  unsafe.Pointer // pinned staging (slot.in, slot.out)
	params     unsafe.Pointer // pinned: kernel argument values and the pointer array
	dIn        uint64         // device copy of the input staging buffer
	dStage     uint64         // zf_lz4 output
	dOut       uint64         // zf_unshuffle output
	stream     uintptr
	ev         [4]uintptr // upload start, kernels start, kernels end, download end
	inCap, cap int
}

// openCUDA loads the driver and prepares device cfg.Device. Every failure
// wraps ErrUnavailable.
func openCUDA(cfg Config) (*cudaEngine, Device, error) {
	var dev Device
	drv, err := loadDriver(cfg.Library)
	if err != nil {
		return nil, dev, err
	}
	if err := drv.check("cuInit", drv.cuInit(0)); err != nil {
		if code, ok := cudaCode(err); ok && code == cudaErrorNoDevice {
			return nil, dev, absentErr(err, "%v", err)
		}
		return nil, dev, unavailableErr(err, "%v", err)
	}
	if err := drv.bindAll(); err != nil {
		return nil, dev, err
	}
	var n int32
	if err := drv.check("cuDeviceGetCount", drv.cuDeviceGetCount(&n)); err != nil {
		return nil, dev, unavailableErr(err, "%v", err)
	}
	if n == 0 {
		return nil, dev, absentErr(nil, "no CUDA device")
	}
	if cfg.Device < 0 || cfg.Device >= int(n) {
		return nil, dev, unavailableErr(nil, "device %d requested, %d present", cfg.Device, n)
	}
	e := &cudaEngine{drv: drv}
	err = e.setup(cfg, &dev)
	if err != nil {
		e.close()
		var u *unavailable
		if !errors.As(err, &u) {
			err = unavailableErr(err, "%v", err)
		}
		return nil, dev, err
	}
	return e, dev, nil
}

// setup fills dev, retains the primary context and loads the kernels.
func (e *cudaEngine) setup(cfg Config, dev *Device) error {
	d := e.drv
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&e.dev, int32(cfg.Device))); err != nil {
		return err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), e.dev)); err != nil {
		return err
	}
	dev.Ordinal = cfg.Device
	dev.Name = cString(&name[0])
	var v int32
	for _, a := range []struct {
		attr int32
		to   *int
	}{{attrComputeCapMajor, &dev.Major}, {attrComputeCapMinor, &dev.Minor}, {attrMultiprocessorCount, &dev.SMs}} {
		if err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a.attr, e.dev)); err != nil {
			return err
		}
		*a.to = int(v)
	}
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&v)); err != nil {
		return err
	}
	dev.Driver = int(v)
	if dev.Major < 8 {
		return unavailableErr(nil, "%s has compute capability %d.%d; the kernels need 8.0 or newer", dev.Name, dev.Major, dev.Minor)
	}

	var ctx uintptr
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&ctx, e.dev)); err != nil {
		return err
	}
	e.ctx = ctx
	return e.withCtx(func() error {
		for _, k := range []struct {
			ptx, name string
			fn        *uintptr
		}{{lz4PTX, lz4Kernel, &e.lz4}, {shufflePTX, unshuffleKernel, &e.unshuffle}} {
			img := append([]byte(k.ptx), 0)
			var mod uintptr
			if err := d.check("cuModuleLoadData("+k.name+")", d.cuModuleLoadData(&mod, &img[0])); err != nil {
				return err
			}
			e.mods = append(e.mods, mod)
			if err := d.check("cuModuleGetFunction("+k.name+")", d.cuModuleGetFunction(k.fn, mod, k.name)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *cudaEngine) name() string { return "cuda" }

// withCtx runs fn on a locked OS thread with the context current.
func (e *cudaEngine) withCtx(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := e.drv.check("cuCtxSetCurrent", e.drv.cuCtxSetCurrent(e.ctx)); err != nil {
		return err
	}
	return fn()
}

// close unloads the modules and releases the primary context.
func (e *cudaEngine) close() {
	if e.ctx == 0 {
		return
	}
	e.withCtx(func() error {
		for _, m := range e.mods {
			e.drv.cuModuleUnload(m)
		}
		return nil
	})
	e.mods = nil
	e.drv.cuDevicePrimaryCtxRelease(e.dev)
	e.ctx = 0
}

// alloc allocates a slot: pinned staging, device buffers, a stream and
// events. On failure it frees what it got.
func (e *cudaEngine) alloc(inCap, outCap int) (*slot, error) {
	c := &cudaSlot{inCap: inCap, cap: outCap}
	s := &slot{dev: c}
	err := e.withCtx(func() error {
		d := e.drv
		for _, h := range []struct {
			p *unsafe.Pointer
			n int
		}{{&c.inP, inCap}, {&c.outP, outCap}, {&c.params, 256}} {
			if err := d.check("cuMemAllocHost", d.cuMemAllocHost(h.p, uintptr(h.n))); err != nil {
				return err
			}
		}
		for _, m := range []struct {
			p *uint64
			n int
		}{{&c.dIn, inCap}, {&c.dStage, outCap}, {&c.dOut, outCap}} {
			if err := d.check("cuMemAlloc", d.cuMemAlloc(m.p, uintptr(m.n))); err != nil {
				return err
			}
		}
		if err := d.check("cuStreamCreate", d.cuStreamCreate(&c.stream, streamNonBlocking)); err != nil {
			return err
		}
		for i := range c.ev {
			if err := d.check("cuEventCreate", d.cuEventCreate(&c.ev[i], eventDefault)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.free(s)
		return nil, fmt.Errorf("gpu: allocating %d + %d bytes of staging: %w", inCap, outCap, err)
	}
	s.in = unsafe.Slice((*byte)(c.inP), inCap)
	s.out = unsafe.Slice((*byte)(c.outP), outCap)
	return s, nil
}

// free releases everything alloc got (zero handles are skipped).
func (e *cudaEngine) free(s *slot) {
	c := s.dev.(*cudaSlot)
	e.withCtx(func() error {
		d := e.drv
		if c.stream != 0 {
			d.cuStreamSynchronize(c.stream)
		}
		for i, ev := range c.ev {
			if ev != 0 {
				d.cuEventDestroy(ev)
				c.ev[i] = 0
			}
		}
		if c.stream != 0 {
			d.cuStreamDestroy(c.stream)
			c.stream = 0
		}
		for _, p := range []*uint64{&c.dIn, &c.dStage, &c.dOut} {
			if *p != 0 {
				d.cuMemFree(*p)
				*p = 0
			}
		}
		for _, p := range []*unsafe.Pointer{&c.inP, &c.outP, &c.params} {
			if *p != nil {
				d.cuMemFreeHost(*p)
				*p = nil
			}
		}
		return nil
	})
	s.in, s.out = nil, nil
}

// run enqueues upload, zf_lz4, zf_unshuffle (when some block is shuffled)
// and download on the slot's stream, waits for the last event, and records
// the kernel and total device times in s.
func (e *cudaEngine) run(s *slot, sl *slice) error {
	c := s.dev.(*cudaSlot)
	return e.withCtx(func() error {
		d := e.drv
		st := c.stream
		if err := d.check("cuEventRecord", d.cuEventRecord(c.ev[0], st)); err != nil {
			return err
		}
		if err := d.check("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(c.dIn, c.inP, uintptr(sl.inLen()), st)); err != nil {
			return err
		}
		if err := d.check("cuEventRecord", d.cuEventRecord(c.ev[1], st)); err != nil {
			return err
		}
		grid := uint32((sl.streams*32 + lz4Threads - 1) / lz4Threads)
		args := kernelArgs(c.params, c.dIn, uint64(sl.streams), c.dIn+uint64(sl.srcOff()), c.dStage)
		if err := d.check("cuLaunchKernel(zf_lz4)", d.cuLaunchKernel(e.lz4, grid, 1, 1, lz4Threads, 1, 1, 0, st, args, nil)); err != nil {
			return err
		}
		result := c.dStage
		if sl.shuffle {
			// Each CTA covers part of a block: about 16 bytes of work per
			// thread for the longest block.
			parts := uint32(min(max((sl.maxBlock+unshuffleThreads*16-1)/(unshuffleThreads*16), 1), 65535))
			args := kernelArgs(c.params, c.dIn+uint64(sl.blkOff()), uint64(sl.blocks), c.dStage, c.dOut)
			if err := d.check("cuLaunchKernel(zf_unshuffle)", d.cuLaunchKernel(e.unshuffle, uint32(sl.blocks), parts, 1, unshuffleThreads, 1, 1, 0, st, args, nil)); err != nil {
				return err
			}
			result = c.dOut
		}
		if err := d.check("cuEventRecord", d.cuEventRecord(c.ev[2], st)); err != nil {
			return err
		}
		if err := d.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(c.outP, c.dIn, uintptr(sl.streams*descSize), st)); err != nil {
			return err
		}
		if err := d.check("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(unsafe.Add(c.outP, sl.outOff()), result, uintptr(sl.outLen), st)); err != nil {
			return err
		}
		if err := d.check("cuEventRecord", d.cuEventRecord(c.ev[3], st)); err != nil {
			return err
		}
		if err := d.check("cuEventSynchronize", d.cuEventSynchronize(c.ev[3])); err != nil {
			return err
		}
		var k, t float32
		if d.cuEventElapsedTime(&k, c.ev[1], c.ev[2]) == cudaSuccess && d.cuEventElapsedTime(&t, c.ev[0], c.ev[3]) == cudaSuccess {
			s.kernel = time.Duration(float64(k) * float64(time.Millisecond))
			s.total = time.Duration(float64(t) * float64(time.Millisecond))
		}
		return nil
	})
}

// kernelArgs writes the four 8-byte kernel arguments (a u32 argument is the
// low half of its slot, little-endian) and the array of pointers to them
// into the pinned params buffer, and returns the array for cuLaunchKernel.
// cuLaunchKernel copies the arguments before it returns, so the buffer can
// be reused for the next launch. It lives in C memory, so the driver never
// holds a pointer into the Go heap.
func kernelArgs(params unsafe.Pointer, a, b, c, d uint64) unsafe.Pointer {
	vals := (*[4]uint64)(params)
	vals[0], vals[1], vals[2], vals[3] = a, b, c, d
	ptrs := (*[4]uintptr)(unsafe.Add(params, 32))
	for i := range ptrs {
		ptrs[i] = uintptr(unsafe.Add(params, 8*i))
	}
	return unsafe.Add(params, 32)
}
