package procfs

import (
	"os"
	"strconv"
	"testing"
)

func TestValue(t *testing.T) {
	status := []byte("Name:\tzfuse\nTgid:\t4242\nVmPeak:\t  2000 kB\nVmHWM:\t   1234 kB\n")
	for _, r := range []struct {
		key, want string
		ok        bool
	}{{"Tgid", "4242", true}, {"VmHWM", "1234 kB", true}, {"Name", "zfuse", true}, {"Vm", "", false}, {"VmRSS", "", false}} {
		if got, ok := Value(status, r.key); got != r.want || ok != r.ok {
			t.Errorf("Value(%s) = %q, %v; want %q, %v", r.key, got, ok, r.want, r.ok)
		}
	}
}

func TestBytes(t *testing.T) {
	for v, want := range map[string]int64{"1234 kB": 1234 << 10, "0 kB": 0, " 7 ": 7} {
		if got, err := Bytes(v); err != nil || got != want {
			t.Errorf("Bytes(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"lots kB", "1 MB", ""} {
		if _, err := Bytes(v); err == nil {
			t.Errorf("Bytes(%q): no error", v)
		}
	}
}

func TestStatus(t *testing.T) {
	v, err := Status(os.Getpid(), "Tgid")
	if err != nil || v != strconv.Itoa(os.Getpid()) {
		t.Errorf("Status(self, Tgid) = %q, %v", v, err)
	}
	if _, err := Status(os.Getpid(), "NoSuchKey"); err == nil {
		t.Error("a key that is not there: no error")
	}
}
