package memlimit

import (
	"errors"
	"fmt"
	"testing"
	"testing/fstest"
)

// The mounts of this package's fixtures, as /proc/self/mountinfo lists
// them (the v1 lines are those of a Debian 12 VM with cgroup v1 and an
// empty cgroup2 hierarchy beside it).
const (
	mountsV1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	mountsV2 = `22 1 0:21 / / rw,relatime - ext4 /dev/vda1 rw
30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	// A container without a cgroup namespace: the hierarchy is mounted
	// from the container's own cgroup.
	mountsDocker = `600 590 0:26 /docker/abc /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw
`
	mountsDockerV1 = `601 590 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:14 - cgroup cgroup rw,memory
`
	// A mount point with a space, escaped.
	mountsSpace = `30 22 0:26 / /sys/fs/my\040cgroup rw,relatime - cgroup2 cgroup2 rw
`
	v1None = "9223372036854771712\n" // v1's "no limit"
	gib    = 1 << 30
	mib    = 1 << 20
)

const meminfo24G = "MemTotal:       25165824 kB\nMemFree:        21894136 kB\nMemAvailable:   20971520 kB\n"

// tree returns a fixture file system: /proc/meminfo of a 24 GiB machine
// and the files given (path: contents).
func tree(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{"proc/meminfo": {Data: []byte(meminfo24G)}}
	for p, s := range files {
		m[p] = &fstest.MapFile{Data: []byte(s)}
	}
	return m
}

func TestFind(t *testing.T) {
	for _, r := range []struct {
		name  string
		files map[string]string
		bytes int64
		dir   string // "" for the machine's memory
		ver   int
	}{
		{"v1 own limit", map[string]string{
			"proc/self/cgroup":                                           "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n",
			"proc/self/mountinfo":                                        mountsV1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 v1None,
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     v1None,
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "268435456\n",
		}, 256 * mib, "sys/fs/cgroup/memory/process_api/abc", 1},
		{"v1 no limit", map[string]string{
			"proc/self/cgroup":                                           "4:memory:/process_api/abc\n0::/\n",
			"proc/self/mountinfo":                                        mountsV1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 v1None,
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     v1None,
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": v1None,
		}, 24 * gib, "", 0},
		{"v1 nested: the parent's lower limit", map[string]string{
			"proc/self/cgroup":                                                           "4:memory:/slurm/uid_0/job_7/step_0\n",
			"proc/self/mountinfo":                                                        mountsV1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                                 v1None,
			"sys/fs/cgroup/memory/slurm/memory.limit_in_bytes":                           v1None,
			"sys/fs/cgroup/memory/slurm/uid_0/memory.limit_in_bytes":                     v1None,
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/memory.limit_in_bytes":               "1073741824\n",
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/step_0/memory.limit_in_bytes":        "2147483648\n",
			"sys/fs/cgroup/memory/slurm/uid_0/job_7/step_0/task_0/memory.limit_in_bytes": "1\n", // not ours
		}, 1 * gib, "sys/fs/cgroup/memory/slurm/uid_0/job_7", 1},
		{"v1 in a container", map[string]string{
			"proc/self/cgroup":                           "4:memory:/docker/abc\n",
			"proc/self/mountinfo":                        mountsDockerV1,
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n",
		}, 512 * mib, "sys/fs/cgroup/memory", 1},
		{"v1 above the machine's memory", map[string]string{
			"proc/self/cgroup":                               "4:memory:/big\n",
			"proc/self/mountinfo":                            mountsV1,
			"sys/fs/cgroup/memory/big/memory.limit_in_bytes": fmt.Sprint(64 * gib),
		}, 24 * gib, "", 0},
		{"v2 nested: the pod's limit", map[string]string{
			"proc/self/cgroup":                                                        "0::/kubepods.slice/pod1.slice/cri-c1.scope\n",
			"proc/self/mountinfo":                                                     mountsV2,
			"sys/fs/cgroup/cgroup.controllers":                                        "cpu memory pids\n",
			"sys/fs/cgroup/kubepods.slice/memory.max":                                 "24000000000\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/memory.max":                      "536870912\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/memory.high":                     "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/cri-c1.scope/memory.max":         "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/cri-c1.scope/memory.high":        "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/cri-c1.scope/memory.current":     "1000\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/cri-c1.scope/cgroup.procs":       "1\n",
			"sys/fs/cgroup/kubepods.slice/pod1.slice/cri-c1.scope/cgroup.controllers": "memory\n",
		}, 512 * mib, "sys/fs/cgroup/kubepods.slice/pod1.slice", 2},
		{"v2 own memory.high below memory.max", map[string]string{
			"proc/self/cgroup":    "0::/system.slice/zfuse.service\n",
			"proc/self/mountinfo": mountsV2,
			"sys/fs/cgroup/system.slice/zfuse.service/memory.max":  "1073741824\n",
			"sys/fs/cgroup/system.slice/zfuse.service/memory.high": "805306368\n",
		}, 768 * mib, "sys/fs/cgroup/system.slice/zfuse.service", 2},
		{"v2 max everywhere", map[string]string{
			"proc/self/cgroup":                                    "0::/user.slice/session-1.scope\n",
			"proc/self/mountinfo":                                 mountsV2,
			"sys/fs/cgroup/user.slice/memory.max":                 "max\n",
			"sys/fs/cgroup/user.slice/session-1.scope/memory.max": "max\n",
		}, 24 * gib, "", 0},
		{"v2 controller off in our cgroup, on above", map[string]string{
			"proc/self/cgroup":                    "0::/job/step\n",
			"proc/self/mountinfo":                 mountsV2,
			"sys/fs/cgroup/job/memory.max":        "314572800\n",
			"sys/fs/cgroup/job/step/cgroup.procs": "1\n", // no memory files
		}, 300 * mib, "sys/fs/cgroup/job", 2},
		{"v2 container with a cgroup namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"proc/self/mountinfo":      mountsV2,
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 256 * mib, "sys/fs/cgroup", 2},
		{"v2 container without one", map[string]string{
			"proc/self/cgroup":         "0::/docker/abc\n",
			"proc/self/mountinfo":      mountsDocker,
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 256 * mib, "sys/fs/cgroup", 2},
		{"v2 under an escaped mount point", map[string]string{
			"proc/self/cgroup":              "0::/a\n",
			"proc/self/mountinfo":           mountsSpace,
			"sys/fs/my cgroup/a/memory.max": "268435456\n",
		}, 256 * mib, "sys/fs/my cgroup/a", 2},
		{"v1 memory beside an empty v2 hierarchy", map[string]string{
			"proc/self/cgroup":                             "4:memory:/a\n0::/a\n",
			"proc/self/mountinfo":                          mountsV1,
			"sys/fs/cgroup/unified/a/cgroup.procs":         "1\n",
			"sys/fs/cgroup/memory/a/memory.limit_in_bytes": "268435456\n",
		}, 256 * mib, "sys/fs/cgroup/memory/a", 1},
		{"cgroup outside the mounted part", map[string]string{
			"proc/self/cgroup":         "0::/elsewhere\n",
			"proc/self/mountinfo":      mountsDocker,
			"sys/fs/cgroup/memory.max": "268435456\n",
		}, 24 * gib, "", 0},
		{"no cgroup files", map[string]string{}, 24 * gib, "", 0},
		{"garbage", map[string]string{
			"proc/self/cgroup":    "what\n0::\n::::\n",
			"proc/self/mountinfo": "- - -\n1 2 3 4 5 6 - cgroup2\n",
		}, 24 * gib, "", 0},
	} {
		t.Run(r.name, func(t *testing.T) {
			l, err := Find(tree(r.files))
			if err != nil {
				t.Fatal(err)
			}
			if l.Bytes != r.bytes || l.Cgroup.Dir != r.dir || l.Cgroup.Version != r.ver || l.Machine != 24*gib {
				t.Errorf("Find = %+v; want %d bytes from %q (v%d)", l, r.bytes, r.dir, r.ver)
			}
		})
	}
}

func TestFindNoMeminfo(t *testing.T) {
	if _, err := Find(fstest.MapFS{}); err == nil {
		t.Error("Find without /proc/meminfo: no error")
	}
}

func TestSelf(t *testing.T) {
	c, err := Self(tree(map[string]string{
		"proc/self/cgroup":    "4:memory:/process_api/abc\n0::/\n",
		"proc/self/mountinfo": mountsV1,
		"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": v1None,
	}))
	if want := (Cgroup{1, "sys/fs/cgroup/memory/process_api/abc", "sys/fs/cgroup/memory"}); err != nil || c != want {
		t.Errorf("Self = %+v, %v; want %+v", c, err, want)
	}
	if c.String() != "cgroup v1 /sys/fs/cgroup/memory/process_api/abc" {
		t.Errorf("String = %q", c.String())
	}
	_, err = Self(tree(nil))
	if !errors.Is(err, ErrNoCgroup) {
		t.Errorf("Self without cgroup files: %v; want ErrNoCgroup", err)
	}
}

func TestUsage(t *testing.T) {
	v1 := Limit{Bytes: 256 * mib, Machine: 24 * gib, Cgroup: Cgroup{1, "cg", "."}}
	v2 := Limit{Bytes: 256 * mib, Machine: 24 * gib, Cgroup: Cgroup{2, "cg", "."}}
	machine := Limit{Bytes: 24 * gib, Machine: 24 * gib}
	for _, r := range []struct {
		name  string
		l     Limit
		files map[string]string
		want  int64
	}{
		{"v1: usage less file pages", v1, map[string]string{
			"cg/memory.usage_in_bytes": "200000000\n",
			// The cgroup's own counts and the hierarchy's (total_): the
			// hierarchy's are the ones that count.
			"cg/memory.stat": "cache 1\nactive_file 5\ninactive_file 7\nshmem 4096\ntotal_active_file 60000000\ntotal_inactive_file 40000000\n",
		}, 100000000},
		{"v2: current less file pages", v2, map[string]string{
			"cg/memory.current": "200000000\n",
			"cg/memory.stat":    "anon 90000000\nfile 110000000\nshmem 10000000\nactive_file 30000000\ninactive_file 70000000\n",
		}, 100000000},
		{"v2: never below zero", v2, map[string]string{
			"cg/memory.current": "1000\n",
			"cg/memory.stat":    "active_file 3000\n",
		}, 0},
		{"machine: total less available", machine, nil, 4 * gib},
	} {
		t.Run(r.name, func(t *testing.T) {
			got, err := Usage(tree(r.files), r.l)
			if err != nil || got != r.want {
				t.Errorf("Usage = %d, %v; want %d", got, err, r.want)
			}
		})
	}
	if _, err := Usage(tree(nil), v2); err == nil {
		t.Error("Usage of a cgroup without files: no error")
	}
}

// FuzzFind: whatever /proc/self/cgroup, /proc/self/mountinfo and the
// cgroup's files hold, Find neither panics nor fails (the machine's memory
// is there), and the limit it returns is positive and at most the
// machine's memory; Usage of it is never negative.
func FuzzFind(f *testing.F) {
	f.Add("4:memory:/process_api/abc\n0::/\n", mountsV1, "268435456\n", "total_active_file 1\n")
	f.Add("0::/kubepods.slice/pod1.slice\n", mountsV2, "max\n", "active_file 5\ninactive_file 9\n")
	f.Add("0::/docker/abc\n", mountsDocker, "-1\n", "")
	f.Add("0::/a\n", mountsSpace, "18446744073709551615\n", "active_file x\n")
	f.Fuzz(func(t *testing.T, cgroup, mountinfo, limit, stat string) {
		m := tree(map[string]string{"proc/self/cgroup": cgroup, "proc/self/mountinfo": mountinfo})
		// The limit and counters in every cgroup directory the fixtures
		// name, and in the one Self finds.
		dirs := []string{"sys/fs/cgroup", "sys/fs/cgroup/memory", "sys/fs/cgroup/memory/process_api/abc",
			"sys/fs/cgroup/kubepods.slice/pod1.slice", "sys/fs/cgroup/my cgroup/a"}
		if c, err := Self(m); err == nil {
			dirs = append(dirs, c.Dir)
		}
		for _, d := range dirs {
			for _, name := range []string{"memory.max", "memory.high", "memory.limit_in_bytes", "memory.current", "memory.usage_in_bytes"} {
				m[d+"/"+name] = &fstest.MapFile{Data: []byte(limit)}
			}
			m[d+"/memory.stat"] = &fstest.MapFile{Data: []byte(stat)}
		}
		l, err := Find(m)
		if err != nil {
			t.Fatalf("Find: %v", err)
		}
		if l.Bytes <= 0 || l.Bytes > l.Machine {
			t.Fatalf("Find = %+v: want 0 < limit <= the machine's memory", l)
		}
		if u, err := Usage(m, l); err == nil && u < 0 {
			t.Fatalf("Usage = %d", u)
		}
	})
}
