package fuseuring

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount mounts a FUSE connection at dir, as go-fuse's fuse.NewServer would
// with opts, and returns its /dev/fuse descriptor, which a Transport needs
// (go-fuse keeps its own to itself): the caller then serves it through
// go-fuse's /dev/fd/N mountpoint. As root it mounts with mount(2), else
// through fusermount3, which passes the descriptor back over a socket.
// Unmount undoes it.
func Mount(dir string, opts *fuse.MountOptions) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return -1, &os.PathError{Op: "mount", Path: dir, Err: err}
	}
	if os.Geteuid() == 0 {
		return mountDirect(dir, opts, st.Mode&unix.S_IFMT)
	}
	return mountFusermount(dir, opts)
}

// mountDirect is Mount as root.
func mountDirect(dir string, opts *fuse.MountOptions, rootMode uint32) (int, error) {
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	data := []string{
		fmt.Sprintf("fd=%d", fd),
		fmt.Sprintf("rootmode=%o", rootMode),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", opts.MaxWrite),
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	for _, o := range opts.Options {
		switch o {
		case "ro":
			flags |= unix.MS_RDONLY
		case "nodev", "nosuid", "noexec":
			flags |= map[string]uintptr{"nodev": unix.MS_NODEV, "nosuid": unix.MS_NOSUID, "noexec": unix.MS_NOEXEC}[o]
		default:
			data = append(data, o)
		}
	}
	if opts.AllowOther {
		data = append(data, "allow_other")
	}
	source := opts.FsName
	if source == "" {
		source = opts.Name
	}
	if err := unix.Mount(source, dir, "fuse."+opts.Name, flags, strings.Join(data, ",")); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "mount", Path: dir, Err: err}
	}
	return fd, nil
}

// mountFusermount is Mount through fusermount3 (libfuse's protocol: the
// helper mounts, then sends the descriptor over the socket named by
// _FUSE_COMMFD).
func mountFusermount(dir string, opts *fuse.MountOptions) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	local, remote := os.NewFile(uintptr(pair[0]), "fusermount-local"), os.NewFile(uintptr(pair[1]), "fusermount-remote")
	defer local.Close()
	defer remote.Close()
	var o []string
	o = append(o, opts.Options...)
	if opts.AllowOther {
		o = append(o, "allow_other")
	}
	if opts.FsName != "" {
		o = append(o, "fsname="+opts.FsName)
	}
	if opts.Name != "" {
		o = append(o, "subtype="+opts.Name)
	}
	o = append(o, fmt.Sprintf("max_read=%d", opts.MaxWrite))
	cmd := exec.Command(fusermount(), "-o", strings.Join(o, ","), "--", dir)
	cmd.Env = append(os.Environ(), "_FUSE_COMMFD=3")
	cmd.ExtraFiles = []*os.File{remote}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return -1, fmt.Errorf("fusermount3: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return receiveFd(local)
}

// receiveFd receives the one descriptor fusermount3 sends.
func receiveFd(local *os.File) (int, error) {
	c, err := net.FileConn(local)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	var data [4]byte
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := c.(*net.UnixConn).ReadMsgUnix(data[:], oob)
	if err != nil {
		return -1, fmt.Errorf("fusermount3 sent no descriptor: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("fusermount3 sent no descriptor (%d messages): %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("fusermount3 sent no descriptor (%d): %v", len(fds), err)
	}
	unix.CloseOnExec(fds[0])
	return fds[0], nil
}

// Unmount unmounts what Mount mounted at dir: as root with umount(2),
// else with fusermount3 -u.
func Unmount(dir string) error {
	if os.Geteuid() == 0 {
		if err := unix.Unmount(dir, 0); err != nil {
			return &os.PathError{Op: "unmount", Path: dir, Err: err}
		}
		return nil
	}
	out, err := exec.Command(fusermount(), "-u", "--", dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fusermount3 -u %s: %v: %s", dir, err, bytes.TrimSpace(out))
	}
	return nil
}

// fusermount names fusermount3, or fusermount where only that is installed.
func fusermount() string {
	for _, name := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return "fusermount3"
}
