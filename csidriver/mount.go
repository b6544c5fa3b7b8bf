package csidriver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/zfuse/zfuse/internal/mountinfo"
)

// The mount step, the one thing the driver needs root for: open
// /dev/fuse, mount(2) the descriptor read-only at the target, and later
// unmount it. The server that answers on the descriptor is another
// process (server.go).

// fsType is the file system type of every zfuse mount.
const fsType = "fuse.zfuse"

// fsNamePrefix starts the source the mount table shows for the driver's
// mounts, followed by the volume ID: never the store's URL, which may
// carry a token in its query.
const fsNamePrefix = "zfuse-csi:"

var (
	errTargetBusy = errors.New("csidriver: target is not an empty directory")
	errTargetType = errors.New("csidriver: target is not a directory")
)

// prepareTarget makes target the empty directory a mount needs: it
// creates it if missing (the CO creates its parent; the plugin the path
// itself) and reports whether it did. An existing target must be an empty
// directory that nothing is mounted on (errTargetBusy, errTargetType).
func prepareTarget(target string) (created bool, err error) {
	err = os.Mkdir(target, 0o750)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return false, err
	}
	fi, err := os.Lstat(target)
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		what := "a file"
		if t := fi.Mode().Type(); t != 0 {
			what = "of type " + t.String()
		}
		return false, fmt.Errorf("%s: %w: it is %s", target, errTargetType, what)
	}
	if m, ok := mountAt(target); ok {
		return false, fmt.Errorf("%s: %w: %s (%s) is mounted there", target, errTargetBusy, m.Source, m.FSType)
	}
	d, err := os.Open(target)
	if err != nil {
		return false, err
	}
	defer d.Close()
	if names, err := d.Readdirnames(1); err != io.EOF {
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("%s: %w: it holds %s", target, errTargetBusy, names[0])
	}
	return false, nil
}

// fuseMount opens /dev/fuse and mounts it read-only at target for a
// server running as uid:gid, with allow_other, so that the pod's users,
// whoever they are, may read it. It returns the descriptor, for the
// server; the caller closes its copy once the server holds it.
func fuseMount(target, volumeID string, uid, gid int) (*os.File, error) {
	dev, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0) // O_CLOEXEC: os opens so
	if err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=%d,group_id=%d,allow_other", dev.Fd(), uid, gid)
	flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount(fsNamePrefix+volumeID, target, fsType, flags, opts); err != nil {
		dev.Close()
		return nil, fmt.Errorf("mount %s at %s: %w", fsType, target, err)
	}
	return dev, nil
}

// unmount unmounts target, if something is mounted there. A target still
// in use (EBUSY: a process on the node holds a file or a directory under
// it; the pod itself is gone when the kubelet unpublishes) is detached
// (MNT_DETACH): the path is freed at once, and the server's connection
// ends once the last file is closed. It reports whether a mount was there.
func unmount(target string) (bool, error) {
	if _, ok := mountAt(target); !ok {
		return false, nil
	}
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: not a mount point (any more)
		return true, fmt.Errorf("unmount %s: %w", target, err)
	}
	return true, nil
}

// mountAt returns the top mount at target from the mount table (which,
// unlike stat, does not hang on a mount whose server is stuck or dead).
func mountAt(target string) (mountinfo.Mount, bool) {
	abs, err := mountinfo.Resolve(target)
	if err != nil {
		return mountinfo.Mount{}, false
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return mountinfo.Mount{}, false
	}
	return mountinfo.Top(ms, abs)
}

// isOurs reports whether m is a mount of the driver's.
func isOurs(m mountinfo.Mount) bool {
	return m.FSType == fsType && strings.HasPrefix(m.Source, fsNamePrefix)
}

// removeTarget removes the directory target, once nothing is mounted on
// it: the spec has the plugin remove what it created at the target path.
func removeTarget(target string) error {
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
