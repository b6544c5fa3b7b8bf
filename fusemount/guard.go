package fusemount

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A guard aborts the mount's FUSE connection (fusectl's abort file) when
// this process dies without unmounting: SIGKILL, a crash. The kernel
// aborts it itself once the server's /dev/fuse descriptor is closed, but
// a dying server can keep it open for good: a thread of it writing a
// chunk into the page cache (FUSE_NOTIFY_STORE) waits, uninterruptibly,
// for the lock of a page that a reader's READ holds, and that READ waits
// for an answer only the dead server could give; the process never
// exits, and the mount and every reader hang. The guard is a child (sh)
// told of the death by the kernel (PR_SET_PDEATHSIG, sent when the thread
// that started it exits: one locked to it for the mount's life); an
// abort ends those READs, and the server's last threads exit.
type guard struct {
	in   io.WriteCloser // closed to end the guard without aborting
	cmd  *exec.Cmd
	done chan struct{} // closed once the guard is ended
}

const guardScript = `trap 'echo 1 > "$1"; exit' TERM; while read -r _; do :; done`

// startGuard starts the guard of the mount at dir, or returns nil where
// its connection's abort file cannot be found (fusectl not mounted and
// not mountable, a /dev/fd/N mountpoint) or sh cannot run.
func startGuard(dir string) *guard {
	dev, err := mountDevice(dir)
	if err != nil {
		return nil
	}
	_, minor, _ := strings.Cut(dev, ":")
	abort := "/sys/fs/fuse/connections/" + minor + "/abort"
	if _, err := os.Stat(abort); err != nil {
		// fusectl is not mounted (systemd mounts it; a container or a
		// bare machine may not): mount it, where this process may.
		unix.Mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, "")
		if _, err := os.Stat(abort); err != nil {
			return nil
		}
	}
	g := &guard{done: make(chan struct{})}
	started := make(chan bool)
	go func() {
		// Never unlocked: the thread exits with the goroutine, after the
		// guard has ended, or with the process.
		runtime.LockOSThread()
		g.cmd = exec.Command("sh", "-c", guardScript, "sh", abort)
		g.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		in, err := g.cmd.StdinPipe()
		if err == nil {
			err = g.cmd.Start()
		}
		if err != nil {
			started <- false
			return
		}
		g.in = in
		started <- true
		g.cmd.Wait()
		close(g.done)
	}()
	if !<-started {
		return nil
	}
	return g
}

// stop ends the guard without aborting anything, once the mount is gone.
func (g *guard) stop() {
	if g != nil {
		g.in.Close()
		<-g.done
	}
}
