package mountinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Mount
	}{{
		name: "plain",
		in:   "22 1 0:21 / /proc rw,nosuid - proc proc rw\n",
		want: []Mount{{Dev: "0:21", Root: "/", MountPoint: "/proc", Options: "rw,nosuid", FSType: "proc", Source: "proc", SuperOptions: "rw"}},
	}, {
		name: "optional fields",
		in:   "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue",
		want: []Mount{{Dev: "98:0", Root: "/mnt1", MountPoint: "/mnt2", Options: "rw,noatime", Optional: []string{"master:1", "shared:7"}, FSType: "ext3", Source: "/dev/root", SuperOptions: "rw,errors=continue"}},
	}, {
		name: "escapes",
		in:   `90 30 0:52 / /tmp/a\040b\011c\134d rw - fuse.zfuse /data/my\040store rw,user_id=0` + "\n",
		want: []Mount{{Dev: "0:52", Root: "/", MountPoint: "/tmp/a b\tc\\d", Options: "rw", FSType: "fuse.zfuse", Source: "/data/my store", SuperOptions: "rw,user_id=0"}},
	}, {
		name: "newline escaped, incomplete escape kept",
		in:   `91 30 0:53 / /x\012y\04 rw - fuse /dev/fuse rw`,
		want: []Mount{{Dev: "0:53", Root: "/", MountPoint: "/x\ny\\04", Options: "rw", FSType: "fuse", Source: "/dev/fuse", SuperOptions: "rw"}},
	}, {
		name: "a dash that is not the separator",
		in:   "92 30 0:54 / /m-n rw - tmpfs - rw\n",
		want: []Mount{{Dev: "0:54", Root: "/", MountPoint: "/m-n", Options: "rw", FSType: "tmpfs", Source: "-", SuperOptions: "rw"}},
	}, {
		name: "malformed lines skipped",
		in:   "no separator here at all\n1 2 0:1 / /short - x\n\n93 30 0:55 / /ok rw - fuse.zfuse src rw\n",
		want: []Mount{{Dev: "0:55", Root: "/", MountPoint: "/ok", Options: "rw", FSType: "fuse.zfuse", Source: "src", SuperOptions: "rw"}},
	}, {
		name: "empty",
		in:   "",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestTop(t *testing.T) {
	ms := Parse([]byte("1 0 0:1 / /mnt rw - tmpfs tmpfs rw\n" +
		"2 1 0:2 / /mnt rw - fuse.zfuse store rw\n" +
		"3 1 0:3 / /mnt/sub rw - fuse.zfuse other rw\n"))
	if m, ok := Top(ms, "/mnt"); !ok || m.Dev != "0:2" || m.Minor() != "2" {
		t.Errorf("Top(/mnt) = %+v, %v; want the last mount there, 0:2", m, ok)
	}
	if m, ok := Top(ms, "/mnt/other"); ok {
		t.Errorf("Top(/mnt/other) = %+v, want none", m)
	}
}

func TestRead(t *testing.T) {
	ms, err := Read()
	if err != nil {
		t.Skipf("no /proc/self/mountinfo: %v", err)
	}
	if m, ok := Top(ms, "/"); !ok || m.FSType == "" {
		t.Errorf("Top(/) = %+v, %v; want the root file system", m, ok)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The parent is resolved; the last element is not, even when it is a
	// symlink (resolving it would stat the mount's root).
	for in, want := range map[string]string{
		filepath.Join(dir, "link", "mnt"): filepath.Join(realDir, "real", "mnt"),
		filepath.Join(dir, "link"):        filepath.Join(realDir, "link"),
		filepath.Join(dir, "gone", "mnt"): filepath.Join(dir, "gone", "mnt"),
	} {
		if got, err := Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// TestContaining: the mount a path lies in is the top one at the deepest
// mount point at or above it, paths compared as they are.
func TestContaining(t *testing.T) {
	ms := Parse([]byte(`1 0 8:1 / / rw - ext4 /dev/sda1 rw
2 1 0:40 / /mnt rw - tmpfs tmpfs rw
3 2 0:52 / /mnt/era5 ro - fuse.zfuse /data/era5.zarr ro
4 2 0:53 / /mnt/era5 ro - fuse.zfuse /data/other.zarr ro
`))
	for path, want := range map[string]string{
		"/mnt/era5/t2m/0.0.0": "0:53", // the top of the two at /mnt/era5
		"/mnt/era5":           "0:53",
		"/mnt/era5x":          "0:40",
		"/home/user":          "8:1",
		"/":                   "8:1",
	} {
		if m, ok := Containing(ms, path); !ok || m.Dev != want {
			t.Errorf("Containing(%q) = %v, %v; want %s", path, m.Dev, ok, want)
		}
	}
	if _, ok := Containing(ms[1:], "/home"); ok {
		t.Error("a path under no mount point was found")
	}
}

// TestAt: the mount at a directory, from this process's mount table: none
// at a temporary directory (no mount point), the root's at "/".
func TestAt(t *testing.T) {
	if _, ok, err := At(t.TempDir()); err != nil || ok {
		t.Errorf("At(a temporary directory): %v, %v", ok, err)
	}
	if m, ok, err := At("/"); err != nil || !ok || m.MountPoint != "/" {
		t.Errorf("At(/): %+v, %v, %v", m, ok, err)
	}
}
