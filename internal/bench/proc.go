package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zfuse/zfuse/internal/procfs"
)

// CPUTime returns the CPU time (user and system) process pid has used.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseCPUTime(string(b))
}

// ParseCPUTime reads utime and stime (fields 14 and 15, in clock ticks of
// 1/100 s, Linux's USER_HZ) from a /proc/PID/stat line. The command name
// (field 2) may hold spaces, so fields are counted after its ")".
func ParseCPUTime(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/PID/stat: %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// VmHWM returns the peak resident set size of process pid.
func VmHWM(pid int) (int64, error) {
	v, err := procfs.Status(pid, "VmHWM")
	if err != nil {
		return 0, err
	}
	return procfs.Bytes(v)
}
