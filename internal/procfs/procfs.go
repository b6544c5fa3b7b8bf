// Package procfs reads the "Key: value" files of /proc (proc(5)): a
// process's status (/proc/PID/status) and the machine's memory
// (/proc/meminfo), for the mount (a reader's thread group), the memory
// plan and the bench harness (a mount's peak memory).
//
// It imports nothing else of zfuse.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Value returns the value of key in text, lines of "Key: value" (tabs
// or spaces after the colon), trimmed, and whether key is there.
func Value(text []byte, key string) (string, bool) {
	for line := range bytes.Lines(text) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(k) == key {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

// Bytes parses a size as /proc writes it, "1234 kB" (a value without a
// unit is bytes).
func Bytes(v string) (int64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procfs: %q is not a size", v)
	}
	switch unit {
	case "kB":
		return n << 10, nil
	case "":
		return n, nil
	}
	return 0, fmt.Errorf("procfs: %q: unknown unit", v)
}

// Status returns the value of key in /proc/PID/status of pid (a process,
// or a thread: its Tgid is its process).
func Status(pid int, key string) (string, error) {
	name := "/proc/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	v, ok := Value(b, key)
	if !ok {
		return "", fmt.Errorf("%s: no %s line", name, key)
	}
	return v, nil
}
