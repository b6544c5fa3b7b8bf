// Package memlimit fits a mount to the memory it may use. It finds the
// limit (Find: the limit of its memory cgroup, v2 memory.max or
// memory.high, v1 memory.limit_in_bytes, the lowest of its own cgroup's
// and its ancestors'; else the machine's memory) and how much of that is
// in use (Usage); it sizes the loader's budgets to fit (NewPlan, plan.go);
// and it sheds them while the memory in use nears the limit (Watcher,
// pressure.go).
//
// The one fact to know: it reads /proc and /sys through an fs.FS rooted at
// "/" (os.DirFS("/") in production), so that tests give it fixture trees;
// the paths it returns are relative to that root, as fs.FS paths are.
//
// Of zfuse it imports internal/mountinfo and internal/procfs, to read the
// mount table and /proc/meminfo, and internal/bytesize, to say sizes as
// the flags take them; what it sheds
// is anything with the loader's SetBudgets.
package memlimit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/zfuse/zfuse/internal/mountinfo"
	"github.com/zfuse/zfuse/internal/procfs"
)

// ErrNoCgroup means the process has no memory cgroup that can be read:
// no cgroup file system with the memory controller is mounted where
// /proc/self/mountinfo says, or /proc/self/cgroup names none.
var ErrNoCgroup = errors.New("memlimit: no memory cgroup")

// A Cgroup is a memory cgroup: its version (1 or 2) and its directory in
// the cgroup file system ("sys/fs/cgroup/kubepods/pod1"), relative to the
// FS root, and the directory where that hierarchy is mounted (Dir or
// above it: the top this process can see).
type Cgroup struct {
	Version int
	Dir     string
	Mount   string
}

func (c Cgroup) String() string { return fmt.Sprintf("cgroup v%d /%s", c.Version, c.Dir) }

// Self returns the memory cgroup of the process, from proc/self/cgroup and
// proc/self/mountinfo: the v1 hierarchy with the memory controller where
// one is mounted, else the v2 one. The error wraps ErrNoCgroup when there
// is none.
func Self(fsys fs.FS) (Cgroup, error) {
	cg, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return Cgroup{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	mi, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return Cgroup{}, fmt.Errorf("%w: %w", ErrNoCgroup, err)
	}
	v1, v2, hasV1, hasV2 := cgroupPaths(cg)
	var errs []error
	if hasV1 {
		c, err := locate(fsys, mi, 1, v1)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if hasV2 {
		c, err := locate(fsys, mi, 2, v2)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return Cgroup{}, fmt.Errorf("%w: /proc/self/cgroup names no memory cgroup", ErrNoCgroup)
	}
	return Cgroup{}, errors.Join(errs...)
}

// cgroupPaths returns the process's cgroup paths from /proc/self/cgroup:
// in the v1 hierarchy holding the memory controller ("4:memory:/a/b"), and
// in the v2 hierarchy ("0::/a/b").
func cgroupPaths(b []byte) (v1, v2 string, hasV1, hasV2 bool) {
	for line := range strings.Lines(string(b)) {
		id, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			v2, hasV2 = p, true
		case hasController(controllers, "memory"):
			v1, hasV1 = p, true
		}
	}
	return v1, v2, hasV1, hasV2
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// locate finds the directory of the cgroup p (a path in the hierarchy of
// the version given) from the mounts in mountinfo: a mount of that
// hierarchy whose root is p or above it. For v2 the memory controller
// need not be on in the cgroup itself: an ancestor's limit still applies.
func locate(fsys fs.FS, mi []byte, version int, p string) (Cgroup, error) {
	for _, m := range mountinfo.Parse(mi) {
		switch {
		case version == 1 && m.FSType == "cgroup" && hasController(m.SuperOptions, "memory"):
		case version == 2 && m.FSType == "cgroup2":
		default:
			continue
		}
		rel, ok := under(p, m.Root)
		if !ok {
			continue
		}
		mnt := strings.TrimPrefix(path.Clean(m.MountPoint), "/")
		dir := path.Join(mnt, rel)
		if _, err := fs.Stat(fsys, cmp.Or(dir, ".")); err != nil {
			continue
		}
		return Cgroup{Version: version, Dir: dir, Mount: mnt}, nil
	}
	return Cgroup{}, fmt.Errorf("%w: cgroup v%d %s is not under a mounted cgroup file system with the memory controller", ErrNoCgroup, version, p)
}

// under returns p relative to root ("" for p itself), if p is root or below it.
func under(p, root string) (string, bool) {
	p, root = path.Clean(p), path.Clean(root)
	switch {
	case root == "/":
		return strings.TrimPrefix(p, "/"), true
	case p == root:
		return "", true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root)+1:], true
	}
	return "", false
}

// A Limit is the memory a process may use.
type Limit struct {
	Bytes   int64  // the limit: the cgroup's, or the machine's memory
	Machine int64  // the machine's memory (MemTotal)
	Cgroup  Cgroup // the cgroup whose limit Bytes is; Version 0 when it is the machine's memory
}

// From says where the limit comes from: "cgroup v2 /sys/fs/cgroup/job",
// or "machine memory".
func (l Limit) From() string {
	if l.Cgroup.Version == 0 {
		return "machine memory"
	}
	return l.Cgroup.String()
}

// Find returns the memory limit of the process: the lowest limit of its
// memory cgroup and the cgroup's ancestors (up to the top of the hierarchy
// the process sees), where that is below the machine's memory; else the
// machine's memory. Without a readable memory cgroup the machine's memory
// is the limit, and that is not an error; it fails only when the machine's
// memory cannot be read either.
func Find(fsys fs.FS) (Limit, error) {
	total, err := meminfo(fsys, "MemTotal")
	if err != nil {
		return Limit{}, err
	}
	l := Limit{Bytes: total, Machine: total}
	c, err := Self(fsys)
	if err != nil {
		return l, nil
	}
	for dir := c.Dir; ; dir = path.Dir(dir) {
		if n, ok := limitOf(fsys, c.Version, dir); ok && n < l.Bytes {
			l.Bytes = n
			l.Cgroup = Cgroup{Version: c.Version, Dir: dir, Mount: c.Mount}
		}
		if dir == c.Mount || dir == "." {
			break
		}
	}
	return l, nil
}

// unlimited is above any limit a cgroup reports for "none": v1 writes
// PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages).
const unlimited = 1 << 62

// limitOf returns the limit set on the cgroup in dir, if any: v2's lower
// of memory.max and memory.high ("max" is none), v1's
// memory.limit_in_bytes.
func limitOf(fsys fs.FS, version int, dir string) (int64, bool) {
	files := []string{"memory.max", "memory.high"}
	if version == 1 {
		files = []string{"memory.limit_in_bytes"}
	}
	var limit int64 = -1
	for _, name := range files {
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n >= unlimited {
			continue
		}
		if limit < 0 || n < limit {
			limit = n
		}
	}
	return limit, limit >= 0
}

// Usage returns the memory in use that counts against l and that the
// kernel cannot take back by dropping clean file pages: for a cgroup, its
// usage (v2 memory.current, v1 memory.usage_in_bytes, its descendants
// included) less its file pages (active_file and inactive_file of
// memory.stat, v1's total_ ones), as Kubernetes counts a pod's working
// set; for the machine, MemTotal less MemAvailable. Memfds and tmpfs
// files count (they are not file pages: without swap they stay).
func Usage(fsys fs.FS, l Limit) (int64, error) {
	if l.Cgroup.Version == 0 {
		avail, err := meminfo(fsys, "MemAvailable")
		if err != nil {
			return 0, err
		}
		return max(l.Machine-avail, 0), nil
	}
	dir := l.Cgroup.Dir
	usage, active, inactive := "memory.current", "active_file", "inactive_file"
	if l.Cgroup.Version == 1 {
		usage, active, inactive = "memory.usage_in_bytes", "total_active_file", "total_inactive_file"
	}
	b, err := fs.ReadFile(fsys, path.Join(dir, usage))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memlimit: %s/%s: %w", dir, usage, err)
	}
	st, err := fs.ReadFile(fsys, path.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	file := statValue(st, active) + statValue(st, inactive)
	return max(n-file, 0), nil
}

// statValue returns the value of key in a memory.stat file ("key value"
// lines), 0 when it is absent.
func statValue(b []byte, key string) int64 {
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		if ok && string(k) == key {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
	}
	return 0
}

// meminfo returns the field of proc/meminfo ("MemTotal: 24 kB"), in bytes.
func meminfo(fsys fs.FS, field string) (int64, error) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	v, ok := procfs.Value(b, field)
	if !ok {
		return 0, fmt.Errorf("memlimit: no %s in /proc/meminfo", field)
	}
	n, err := procfs.Bytes(v)
	if err != nil {
		return 0, fmt.Errorf("memlimit: /proc/meminfo: %w", err)
	}
	return n, nil
}
