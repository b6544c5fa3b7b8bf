package csidriver

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStateRoundTrip(t *testing.T) {
	st, err := openState(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	target := "/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/v/mount"
	if r, err := st.load(target); r != nil || err != nil {
		t.Fatalf("load before save: %v, %v", r, err)
	}
	want := &record{VolumeID: "csi-1", Target: target, Source: "s3://b/p", Flags: []string{"--as-v2=true"}, Pid: 42, Start: 7, Time: time.Now().UTC()}
	if err := st.save(want); err != nil {
		t.Fatal(err)
	}
	got, err := st.load(target + "/") // the same target, spelled otherwise
	if err != nil || got == nil || got.VolumeID != want.VolumeID || got.Pid != 42 || !got.sameSettings(Settings{Source: "s3://b/p", Flags: []string{"--as-v2=true"}}) {
		t.Fatalf("load: %+v, %v", got, err)
	}
	if got.sameSettings(Settings{Source: "s3://b/p"}) {
		t.Error("sameSettings ignores the flags")
	}
	os.WriteFile(filepath.Join(st.dir, "volumes", "junk.json"), []byte("{"), 0o600)
	rs, bad, err := st.all()
	if err != nil || len(rs) != 1 || len(bad) != 1 {
		t.Fatalf("all: %d records, bad %v, %v", len(rs), bad, err)
	}
	if fi, err := os.Stat(st.recordPath(target)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if err := st.remove(target); err != nil {
		t.Fatal(err)
	}
	if err := st.remove(target); err != nil {
		t.Errorf("remove twice: %v", err)
	}
	if r, _ := st.load(target); r != nil {
		t.Error("record still there")
	}
}

// TestProc: a process is known by its pid and start time, so a record of
// an exited server whose pid was given to another process names nothing.
func TestProc(t *testing.T) {
	start, err := startTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !(proc{pid: os.Getpid(), start: start}).alive() {
		t.Error("this process is not alive")
	}
	if (proc{pid: os.Getpid(), start: start + 1}).alive() {
		t.Error("a reused pid counts as the process recorded")
	}
	if (proc{pid: 0}).alive() {
		t.Error("pid 0 is alive")
	}
	if signalled, err := (proc{pid: os.Getpid(), start: start + 1}).stop(); signalled || err != nil {
		t.Errorf("stop of a process that is gone: signalled %v, %v", signalled, err)
	}
}
