package integration

// zfuse csi, driven through its gRPC socket exactly as the kubelet calls
// it: the plugin (root) mounts /dev/fuse, a zfuse mount as nobody serves
// it, zarr-python reads the target, and a restart of the plugin between
// publish and read changes nothing.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/zfuse/zfuse/internal/testutil"
)

// A plugin is a running zfuse csi and a gRPC connection to it.
type plugin struct {
	Sock, State string
	Node        csi.NodeClient
	Identity    csi.IdentityClient
	args        []string
	cmd         *exec.Cmd
	log         *syncBuffer
	exited      chan struct{}
	conn        *grpc.ClientConn
}

// needCSI checks what zfuse csi needs: FUSE, root (to mount for another
// user) and the user nobody to run servers as.
func needCSI(t *testing.T) (uid, gid int) {
	t.Helper()
	needMount(t)
	testutil.Need(t, "root, for zfuse csi to mount for its servers", os.Geteuid() == 0)
	nobody, err := user.Lookup("nobody")
	testutil.Need(t, "the user nobody, for zfuse csi's servers", err == nil)
	uid, _ = strconv.Atoi(nobody.Uid)
	gid, _ = strconv.Atoi(nobody.Gid)
	// The servers, as nobody, need to reach the binary.
	openToAll(t, filepath.Dir(zfuse))
	return uid, gid
}

// openToAll makes dir and its parents readable and searchable by everyone
// (t.TempDir makes them 0700), so that other users can reach what is there.
// It adds those bits and keeps the rest: a chmod 0755 of /tmp would take
// its sticky bit and others' right to write there (apt's _apt user, for
// one, could no longer make its temporary files).
func openToAll(t *testing.T, dir string) string {
	t.Helper()
	for p := dir; p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode(); m&0o055 != 0o055 {
			if err := os.Chmod(p, m|0o055); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// serverCgroup returns a fresh cgroup v2 directory for the plugin's
// --server-cgroup, removed after the test, or "" where there is no cgroup2
// hierarchy.
func serverCgroup(t *testing.T) string {
	t.Helper()
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st syscall.Statfs_t
		if syscall.Statfs(root, &st) != nil || st.Type != 0x63677270 { // CGROUP2_SUPER_MAGIC
			continue
		}
		dir := filepath.Join(root, fmt.Sprintf("zfuse-csi-test-%d", os.Getpid()))
		t.Cleanup(func() { os.Remove(dir) })
		return dir
	}
	return ""
}

// startPlugin starts zfuse csi with a state directory and a socket of its
// own, offering localDir's stores, and connects to it. The test's end stops
// it and checks that it exited cleanly.
func startPlugin(t *testing.T, localDir, cgroup string) *plugin {
	t.Helper()
	dir := openToAll(t, t.TempDir())
	p := &plugin{Sock: filepath.Join(dir, "csi.sock"), State: filepath.Join(dir, "state")}
	p.args = []string{"csi", "--endpoint", "unix://" + p.Sock, "--node-id", "node-1", "--state-dir", p.State, "--log-level", "debug"}
	if localDir != "" {
		p.args = append(p.args, "--local-dir", localDir)
	}
	if cgroup != "" {
		p.args = append(p.args, "--server-cgroup", cgroup)
	}
	p.start(t)
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *plugin) start(t *testing.T) {
	t.Helper()
	p.log, p.exited = &syncBuffer{}, make(chan struct{})
	p.cmd = exec.Command(zfuse, p.args...)
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, exited := p.cmd, p.exited
	go func() { cmd.Wait(); close(exited) }()
	conn, err := grpc.NewClient("unix://"+p.Sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	p.conn, p.Node, p.Identity = conn, csi.NewNodeClient(conn), csi.NewIdentityClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Identity.Probe(ctx, &csi.ProbeRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("zfuse csi did not answer Probe: %v\n%s", err, p.log)
	}
}

// stop stops the plugin with SIGTERM and checks that it exited 0 without
// a data race. The servers it started keep running.
func (p *plugin) stop(t *testing.T) {
	t.Helper()
	if p.cmd == nil {
		return
	}
	p.conn.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("zfuse csi did not exit within a minute of SIGTERM:\n%s", p.log)
	}
	if !p.cmd.ProcessState.Success() || strings.Contains(p.log.String(), "DATA RACE") {
		t.Errorf("zfuse csi: %v\n%s", p.cmd.ProcessState, p.log)
	}
	p.cmd = nil
}

// restart stops the plugin and starts a new one on the same socket and
// state directory, as an upgrade does.
func (p *plugin) restart(t *testing.T) {
	t.Helper()
	p.stop(t)
	p.start(t)
}

// A kubeletVolume is an inline ephemeral volume of a pod, as the kubelet
// publishes it: a volume ID made from the pod's UID and the volume's name,
// a target in the pod's volume directory (whose parent the kubelet makes),
// and the pod's information (podInfoOnMount) among the attributes.
type kubeletVolume struct {
	ID, Target string
	Attributes map[string]string
	Secrets    map[string]string
}

func newKubeletVolume(t *testing.T, attrs map[string]string) *kubeletVolume {
	t.Helper()
	podUID := fmt.Sprintf("5b0c%04d-5d2a-4cbb-9a3e-0a58ac1f%04d", os.Getpid()%10000, time.Now().Nanosecond()%10000)
	h := sha256.Sum256([]byte(podUID + "zarr"))
	parent := filepath.Join(t.TempDir(), "pods", podUID, "volumes", "kubernetes.io~csi", "zarr")
	if err := os.MkdirAll(parent, 0o750); err != nil {
		t.Fatal(err)
	}
	v := &kubeletVolume{ID: "csi-" + hex.EncodeToString(h[:]), Target: filepath.Join(parent, "mount"), Attributes: map[string]string{
		"csi.storage.k8s.io/pod.name": "train-0", "csi.storage.k8s.io/pod.namespace": "default",
		"csi.storage.k8s.io/pod.uid": podUID, "csi.storage.k8s.io/serviceAccount.name": "default",
		"csi.storage.k8s.io/ephemeral": "true",
	}}
	for k, val := range attrs {
		v.Attributes[k] = val
	}
	if s := os.Getenv("ZFUSE_SERVING"); s != "" { // CI runs the integration tests on each serving path
		v.Attributes["serving"] = s
	}
	t.Cleanup(func() { // whatever the test did, nothing stays mounted
		if isMounted(t, v.Target) {
			syscall.Unmount(v.Target, syscall.MNT_DETACH)
		}
	})
	return v
}

func (v *kubeletVolume) publish(ctx context.Context, p *plugin) error {
	_, err := p.Node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId:   v.ID,
		TargetPath: v.Target,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Readonly:      true,
		VolumeContext: v.Attributes,
		Secrets:       v.Secrets,
	})
	return err
}

func (v *kubeletVolume) unpublish(ctx context.Context, p *plugin) error {
	_, err := p.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.ID, TargetPath: v.Target})
	return err
}

// csiRecord is the part of a plugin's record of a target that the test
// reads: which process serves it.
type csiRecord struct {
	VolumeID string `json:"volume_id"`
	Target   string `json:"target"`
	Pid      int    `json:"pid"`
	Cgroup   string `json:"cgroup"`
}

// records returns the plugin's records, from its state directory.
func (p *plugin) records(t *testing.T) []csiRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(p.State, "volumes", "*.json"))
	var rs []csiRecord
	for _, f := range files {
		var r csiRecord
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// serverOf returns the record of v's target, failing the test if there is
// none.
func (p *plugin) serverOf(t *testing.T, v *kubeletVolume) csiRecord {
	t.Helper()
	for _, r := range p.records(t) {
		if r.Target == v.Target {
			return r
		}
	}
	t.Fatalf("no record of %s in %s:\n%s", v.Target, p.State, p.log)
	return csiRecord{}
}

// procStatusFields returns the fields of /proc/PID/status.
func procStatusFields(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("server pid %d: %v", pid, err)
	}
	m := map[string]string{}
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(l, ":")
		m[k] = strings.TrimSpace(v)
	}
	return m
}

// running reports whether pid is a process that has not exited (a zombie
// waiting for a parent that is not us counts as exited).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// checkUnprivileged checks that the server pid runs as uid:gid, in a
// session of its own, holding no capabilities, and in the cgroup cg (if
// not "").
func checkUnprivileged(t *testing.T, pid, uid, gid int, cg string) {
	t.Helper()
	st := procStatusFields(t, pid)
	for _, k := range []string{"Uid", "Gid"} {
		want := strconv.Itoa(uid)
		if k == "Gid" {
			want = strconv.Itoa(gid)
		}
		for _, id := range strings.Fields(st[k]) { // real, effective, saved, file system
			if id != want {
				t.Errorf("server pid %d: %s %s, want %s in every field", pid, k, st[k], want)
				break
			}
		}
	}
	if st["Groups"] != "" {
		t.Errorf("server pid %d: supplementary groups %q, want none", pid, st["Groups"])
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if v, err := strconv.ParseUint(st[k], 16, 64); err != nil || v != 0 {
			t.Errorf("server pid %d: %s %s, want 0", pid, k, st[k])
		}
	}
	if sid, err := unixGetsid(pid); err != nil || sid != pid {
		t.Errorf("server pid %d: session %d (%v), want a session of its own", pid, sid, err)
	}
	t.Logf("server pid %d: Uid %s, Gid %s, CapPrm %s, CapEff %s, CapAmb %s, cgroup %q", pid, st["Uid"], st["Gid"], st["CapPrm"], st["CapEff"], st["CapAmb"], cg)
	if cg != "" {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if rel := "/" + filepath.Base(filepath.Dir(cg)) + "/" + filepath.Base(cg); !strings.Contains(string(b), "0::") || !strings.Contains(string(b), rel) {
			t.Errorf("server pid %d: cgroups\n%s\nwant the v2 cgroup %s", pid, b, cg)
		}
	}
}

func unixGetsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// writeCSIStore writes a small compressed Zarr v2 store with consolidated
// metadata (so that HTTP needs no hints) at dir/name.
func writeCSIStore(t *testing.T, dir, name string) string {
	t.Helper()
	testutil.NeedPython(t, "zarr", "numcodecs")
	script := `
import sys, numpy as np, zarr, numcodecs
g = zarr.open_group(sys.argv[1], mode="w")
t = g.create_dataset("t2m", shape=(50, 37), chunks=(16, 16), dtype="<f4", compressor=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1))
t[:] = np.arange(50 * 37, dtype="<f4").reshape(50, 37) / 7
c = g.create_dataset("counts", shape=(1000,), chunks=(300,), dtype="<i2", compressor=numcodecs.Zlib(level=3))
c[:] = np.arange(1000, dtype="<i2")
zarr.consolidate_metadata(sys.argv[1])
`
	p := filepath.Join(dir, name)
	if out, err := exec.Command(testutil.Python, "-c", script, p).CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v\n%s", p, err, out)
	}
	return p
}

// readThroughTarget reads every array of the store at target with
// zarr-python and compares it with the store at orig.
func readThroughTarget(t *testing.T, target, orig string) {
	t.Helper()
	script := `
import sys, numpy as np, zarr
m, o = zarr.open_group(sys.argv[1], mode="r"), zarr.open_group(sys.argv[2], mode="r")
names = sorted(o.array_keys())
assert sorted(m.array_keys()) == names, (sorted(m.array_keys()), names)
for n in names:
    assert m[n].compressor is None, (n, m[n].compressor)
    assert np.array_equal(m[n][:], o[n][:]), n
print("read", ", ".join(names))
`
	out, err := exec.Command(testutil.Python, "-c", script, target, orig).CombinedOutput()
	if err != nil {
		t.Fatalf("zarr-python through %s: %v\n%s", target, err, out)
	}
	t.Logf("zarr-python: %s", strings.TrimSpace(string(out)))
}

// TestCSIPublish publishes inline ephemeral volumes of a local store and of
// an HTTP store (nginx) as the kubelet does, restarts the plugin, reads
// each target with zarr-python, checks that each server runs as nobody
// with no capabilities, that the local volume's server fits its
// memory-limit and its metrics (its metrics attribute) count the reads, publishes again (nothing changes),
// unpublishes through the new plugin, and checks that nothing is left
// mounted, running or recorded.
func TestCSIPublish(t *testing.T) {
	uid, gid := needCSI(t)
	data := openToAll(t, t.TempDir())
	store := writeCSIStore(t, data, "era5.zarr")
	_, url := startNginx(t, data)
	cg := serverCgroup(t)
	p := startPlugin(t, data, cg)
	ctx := context.Background()

	metrics := testutil.FreeAddr(t)
	vols := map[string]*kubeletVolume{
		"local": newKubeletVolume(t, map[string]string{"source": store, "memory-limit": "256MiB", "metrics": metrics}),
		"http":  newKubeletVolume(t, map[string]string{"source": url + "/era5.zarr", "cache-decoded": "32MiB"}),
	}
	pids := map[string]int{}
	for name, v := range vols {
		if err := v.publish(ctx, p); err != nil {
			t.Fatalf("%s: publish: %v\n%s", name, err, p.log)
		}
		if !isMounted(t, v.Target) {
			t.Fatalf("%s: publish returned, and %s is not mounted", name, v.Target)
		}
		r := p.serverOf(t, v)
		pids[name] = r.Pid
		checkUnprivileged(t, r.Pid, uid, gid, r.Cgroup)
		if cg != "" && filepath.Dir(r.Cgroup) != cg {
			t.Errorf("%s: server cgroup %s, want one under %s", name, r.Cgroup, cg)
		}
	}

	// The local volume's server fits the memory its volume gives it.
	logs, _ := filepath.Glob(filepath.Join(p.State, "logs", "*"))
	sized := false
	for _, l := range logs {
		sized = sized || strings.Contains(string(testutil.Must(os.ReadFile(l))), `msg="memory limit" limit="256 MiB" from=--memory-limit`)
	}
	if !sized {
		t.Errorf("no server log says it fits the local volume's memory-limit, 256 MiB (%v)", logs)
	}

	p.restart(t) // an upgrade: the servers outlive the plugin
	for name, v := range vols {
		if !running(pids[name]) {
			t.Fatalf("%s: the server (pid %d) did not survive the plugin's restart", name, pids[name])
		}
		readThroughTarget(t, v.Target, store)
		if err := v.publish(ctx, p); err != nil { // the kubelet may publish again: a no-op
			t.Errorf("%s: publish again: %v", name, err)
		}
		if r := p.serverOf(t, v); r.Pid != pids[name] {
			t.Errorf("%s: publishing again replaced the server (pid %d, now %d)", name, pids[name], r.Pid)
		}
	}
	if n := scrape(t, metrics)["zfuse_chunk_reads_total"]; n == 0 {
		t.Errorf("the local volume's metrics at %s count no chunk reads", metrics)
	}
	if !strings.Contains(p.log.String(), "found a published volume, served") {
		t.Errorf("the new plugin did not log the volumes it found:\n%s", p.log)
	}

	for name, v := range vols {
		if err := v.unpublish(ctx, p); err != nil {
			t.Fatalf("%s: unpublish: %v\n%s", name, err, p.log)
		}
		if isMounted(t, v.Target) {
			t.Errorf("%s: %s is still mounted", name, v.Target)
		}
		if _, err := os.Stat(v.Target); !os.IsNotExist(err) {
			t.Errorf("%s: the target is left: %v", name, err)
		}
		if running(pids[name]) {
			t.Errorf("%s: the server (pid %d) still runs after unpublish", name, pids[name])
		}
		if err := v.unpublish(ctx, p); err != nil { // idempotent
			t.Errorf("%s: unpublish again: %v", name, err)
		}
	}
	if rs := p.records(t); len(rs) != 0 {
		t.Errorf("records left: %+v", rs)
	}
	if logs, _ := filepath.Glob(filepath.Join(p.State, "logs", "*")); len(logs) != 0 {
		t.Errorf("server logs left: %v", logs)
	}
	if cg != "" {
		if left, _ := os.ReadDir(cg); hasDirs(left) {
			t.Errorf("server cgroups left under %s", cg)
		}
	}
}

// TestCSIS3Secrets publishes a volume of an S3 store (versitygw) twice:
// without secrets, from a plugin whose own environment holds the
// gateway's credentials, the server has none (its requests go unsigned)
// and the publish fails; with the credentials as the volume's secrets
// (nodePublishSecretRef), zarr-python reads the store through the
// target, and the secret is in the server's environment only: not on its
// command line, in the plugin's record or log, or in the server's log.
func TestCSIS3Secrets(t *testing.T) {
	needCSI(t)
	root := openToAll(t, t.TempDir())
	store := writeCSIStore(t, root, "era5.zarr")
	copyTree(t, store, filepath.Join(root, "zarr", "era5.zarr"))
	_, endpoint := startVersitygw(t, root)
	s3Setenv(t) // the plugin's environment: a server must not borrow it
	p := startPlugin(t, "", "")
	ctx := context.Background()
	attrs := map[string]string{"source": "s3://zarr/era5.zarr", "s3-endpoint": endpoint, "s3-path-style": "true", "s3-region": "us-east-1"}

	anon := newKubeletVolume(t, attrs)
	err := anon.publish(ctx, p)
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("publish without secrets: %v, want FailedPrecondition: the plugin's credentials are not the volume's", err)
	}
	t.Logf("publish without secrets: %v", err)
	if isMounted(t, anon.Target) || len(p.records(t)) != 0 {
		t.Errorf("a failed publish left %s mounted or recorded", anon.Target)
	}

	v := newKubeletVolume(t, attrs)
	v.Secrets = map[string]string{"AWS_ACCESS_KEY_ID": s3Access, "AWS_SECRET_ACCESS_KEY": s3Secret}
	if err := v.publish(ctx, p); err != nil {
		t.Fatalf("publish with secrets: %v\n%s", err, p.log)
	}
	readThroughTarget(t, v.Target, store)
	r := p.serverOf(t, v)
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", r.Pid, f))
		if err != nil {
			t.Fatal(err)
		}
		if inEnv := strings.Contains(string(b), "AWS_SECRET_ACCESS_KEY="+s3Secret); inEnv != (f == "environ") {
			t.Errorf("the server's %s holds the secret: %t", f, inEnv)
		}
	}
	kept := []string{p.log.String()}
	for _, pat := range []string{"volumes/*", "logs/*"} {
		files, _ := filepath.Glob(filepath.Join(p.State, pat))
		for _, f := range files {
			kept = append(kept, string(testutil.Must(os.ReadFile(f))))
		}
	}
	for _, k := range kept {
		if strings.Contains(k, s3Secret) {
			t.Errorf("the plugin's log, a record or a server's log holds the secret:\n%s", k)
		}
	}
	if err := v.unpublish(ctx, p); err != nil {
		t.Fatal(err)
	}
	if isMounted(t, v.Target) || running(r.Pid) {
		t.Errorf("after unpublish: mounted %t, server running %t", isMounted(t, v.Target), running(r.Pid))
	}
}

func hasDirs(es []os.DirEntry) bool {
	for _, e := range es {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// TestCSIBadInput: publishes the driver must refuse, each with a gRPC
// error naming the problem, and after each nothing mounted, running or
// recorded.
func TestCSIBadInput(t *testing.T) {
	needCSI(t)
	data := openToAll(t, t.TempDir())
	store := writeCSIStore(t, data, "era5.zarr")
	os.MkdirAll(filepath.Join(data, "empty.zarr"), 0o755)
	_, url := startNginx(t, data)
	p := startPlugin(t, data, "")
	ctx := context.Background()

	tests := []struct {
		name  string
		attrs map[string]string
		setup func(v *kubeletVolume)
		code  codes.Code
		msg   string
	}{
		{name: "missing source", attrs: map[string]string{"as-v2": "true"}, code: codes.InvalidArgument, msg: `"source" is missing`},
		{name: "unknown attribute", attrs: map[string]string{"source": store, "cache_decoded": "1GiB"}, code: codes.InvalidArgument, msg: "unknown attributes cache_decoded"},
		{name: "target not empty", attrs: map[string]string{"source": store}, code: codes.FailedPrecondition, msg: "not an empty directory",
			setup: func(v *kubeletVolume) { os.MkdirAll(filepath.Join(v.Target, "lost+found"), 0o755) }},
		{name: "target a file", attrs: map[string]string{"source": store}, code: codes.FailedPrecondition, msg: "not a directory",
			setup: func(v *kubeletVolume) { os.WriteFile(v.Target, nil, 0o644) }},
		{name: "no such directory", attrs: map[string]string{"source": filepath.Join(data, "none.zarr")}, code: codes.NotFound, msg: "none.zarr: no such directory"},
		{name: "a directory without a store", attrs: map[string]string{"source": filepath.Join(data, "empty.zarr")}, code: codes.FailedPrecondition, msg: "no Zarr metadata"},
		{name: "HTTP store not there", attrs: map[string]string{"source": url + "/none.zarr"}, code: codes.FailedPrecondition, msg: "none.zarr cannot be served"},
		{name: "a bad flag value", attrs: map[string]string{"source": store, "memory-limit": "lots"}, code: codes.FailedPrecondition, msg: "memory-limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newKubeletVolume(t, tt.attrs)
			if tt.setup != nil {
				tt.setup(v)
			}
			err := v.publish(ctx, p)
			if status.Code(err) != tt.code || !strings.Contains(status.Convert(err).Message(), tt.msg) {
				t.Errorf("got %v; want %v saying %q", err, tt.code, tt.msg)
			}
			t.Logf("%v", err)
			if isMounted(t, v.Target) {
				t.Errorf("%s is mounted after a failed publish", v.Target)
			}
			if tt.setup == nil {
				if _, err := os.Stat(v.Target); !os.IsNotExist(err) {
					t.Errorf("a failed publish left the target it made: %v", err)
				}
			}
			if rs := p.records(t); len(rs) != 0 {
				t.Errorf("a failed publish left records: %+v", rs)
			}
		})
	}
	if pid := serverPid(t, data); pid != 0 {
		t.Errorf("a failed publish left a server running (pid %d)", pid)
	}
}

// serverPid returns the pid of a running zfuse mount whose source lies in
// dir (or is an HTTP URL), serving /dev/fd/3, or 0.
func serverPid(t *testing.T, dir string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		n := len(args)
		if n > 3 && filepath.Base(args[0]) == "zfuse" && args[n-1] == "/dev/fd/3" && (strings.HasPrefix(args[n-2], dir) || strings.Contains(args[n-2], "://")) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if running(pid) {
				return pid
			}
		}
	}
	return 0
}
