// Package mountinfo parses /proc/self/mountinfo (proc(5)): the one parser
// of the kernel's mount table, through which every package that reads it
// does (fusemount, mountlib, warmup, memlimit, csidriver).
//
// The one fact to know: it never stats a mount point. A stale FUSE mount
// (its server killed) or a stuck one would hang a stat, or fill the
// kernel's attribute cache for the mount's root, so lookups compare
// paths: At resolves the symlinks of the parent directories only (as
// Resolve does), Top and Containing none.
//
// It imports nothing else of zfuse.
package mountinfo

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Mount is one line of mountinfo. Paths and names are unescaped.
type Mount struct {
	Dev          string   // MAJOR:MINOR ("0:52")
	Root         string   // the root of the mount within its file system
	MountPoint   string   // absolute, as the kernel names it
	Options      string   // per-mount options ("ro,nosuid")
	Optional     []string // optional fields ("shared:1", "master:2"); may be empty
	FSType       string   // "fuse.zfuse" for ours, "fuse" for a bare /dev/fuse mount
	Source       string   // "none" where the file system has none
	SuperOptions string   // per-superblock options
}

// Minor is the minor device number, which names a FUSE mount's connection
// in /sys/fs/fuse/connections.
func (m Mount) Minor() string {
	_, minor, _ := strings.Cut(m.Dev, ":")
	return minor
}

// Parse parses mountinfo's text. A line is
//
//	ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
//
// with spaces, tabs, newlines and backslashes in its fields escaped as
// octal (\040). Lines that do not have this shape are skipped: the kernel
// writes none, and a caller asking about one mount point should not fail
// for another line.
func Parse(data []byte) []Mount {
	var ms []Mount
	for line := range bytes.Lines(data) {
		pre, post, ok := strings.Cut(strings.TrimRight(string(line), "\n"), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 2 {
			continue
		}
		m := Mount{
			Dev:        f[2],
			Root:       Unescape(f[3]),
			MountPoint: Unescape(f[4]),
			Options:    f[5],
			FSType:     Unescape(g[0]),
			Source:     Unescape(g[1]),
		}
		if len(f) > 6 {
			m.Optional = f[6:]
		}
		if len(g) > 2 {
			m.SuperOptions = Unescape(g[2])
		}
		ms = append(ms, m)
	}
	return ms
}

// Read parses /proc/self/mountinfo.
func Read() ([]Mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Parse(b), nil
}

// Top returns the top mount at mountPoint (the last one mounted there,
// which hides the others) and whether there is one. mountPoint is compared
// as it is: give it absolute and clean, resolved as the caller needs.
func Top(ms []Mount, mountPoint string) (Mount, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].MountPoint == mountPoint {
			return ms[i], true
		}
	}
	return Mount{}, false
}

// Containing returns the mount that path lies in: the top mount at path,
// or at the deepest directory above it that is a mount point. path is
// compared as it is: give it absolute and clean.
func Containing(ms []Mount, path string) (Mount, bool) {
	for d := path; ; d = filepath.Dir(d) {
		if m, ok := Top(ms, d); ok {
			return m, true
		}
		if d == filepath.Dir(d) {
			return Mount{}, false
		}
	}
}

// At returns the top mount at dir, from /proc/self/mountinfo, and whether
// there is one: dir made absolute, its parents' symlinks resolved as the
// kernel names mount points (Resolve), dir itself not looked at. Call it
// where the file system of dir's parents answers; where it may not (a
// stuck mount), compare the absolute path with Containing instead.
func At(dir string) (Mount, bool, error) {
	abs, err := Resolve(dir)
	if err != nil {
		return Mount{}, false, err
	}
	ms, err := Read()
	if err != nil {
		return Mount{}, false, err
	}
	m, ok := Top(ms, abs)
	return m, ok, nil
}

// Resolve makes dir absolute and resolves the symlinks of its parent
// directories, as the kernel names mount points, but not of dir itself:
// that would stat the mount's root (see the package doc). Where the
// parents cannot be resolved, it returns the absolute path.
func Resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(parent, filepath.Base(abs))
	}
	return abs, nil
}

// Unescape undoes mountinfo's octal escapes (\040 for a space, \134 for a
// backslash). A backslash not followed by three octal digits stays.
func Unescape(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
