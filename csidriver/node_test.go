package csidriver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func newTestDriver(t *testing.T, localDirs ...string) *Driver {
	t.Helper()
	d, err := New(Config{NodeID: "node-1", StateDir: filepath.Join(t.TempDir(), "state"), Exe: "/nonexistent/zfuse", UID: 65534, GID: 65534, LocalDirs: localDirs})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY},
	}
}

// TestPublishRefused: requests the driver refuses before it mounts
// anything, each with the code the spec gives and a message naming the
// problem. None needs root: nothing is mounted.
func TestPublishRefused(t *testing.T) {
	data := t.TempDir()
	d := newTestDriver(t, data)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	full := filepath.Join(dir, "full")
	os.MkdirAll(filepath.Join(full, "x"), 0o755)
	remote := map[string]string{"source": "https://example.org/a.zarr"}
	block := mountCap()
	block.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	opts := mountCap()
	opts.GetMount().MountFlags = []string{"noatime"}
	tests := []struct {
		name string
		req  *csi.NodePublishVolumeRequest
		code codes.Code
		msg  string
	}{
		{"no volume ID", &csi.NodePublishVolumeRequest{TargetPath: dir + "/t", VolumeCapability: mountCap(), VolumeContext: remote}, codes.InvalidArgument, "no volume ID"},
		{"no target", &csi.NodePublishVolumeRequest{VolumeId: "v", VolumeCapability: mountCap(), VolumeContext: remote}, codes.InvalidArgument, "no target path"},
		{"relative target", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: remote}, codes.InvalidArgument, "not absolute"},
		{"no capability", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeContext: remote}, codes.InvalidArgument, "no volume capability"},
		{"block", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: block, VolumeContext: remote}, codes.InvalidArgument, "block access"},
		{"mount options", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: opts, VolumeContext: remote}, codes.InvalidArgument, `mount option "noatime"`},
		{"missing source", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: mountCap(), VolumeContext: map[string]string{"as-v2": "true"}}, codes.InvalidArgument, `"source" is missing`},
		{"unknown attribute", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: mountCap(), VolumeContext: map[string]string{"source": "s3://b/p", "colour": "red"}}, codes.InvalidArgument, "unknown attributes colour"},
		{"source outside the offered directories", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: mountCap(), VolumeContext: map[string]string{"source": "/etc"}}, codes.InvalidArgument, "outside the directories"},
		{"no such local source", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: dir + "/t", VolumeCapability: mountCap(), VolumeContext: map[string]string{"source": data + "/none.zarr"}}, codes.NotFound, "none.zarr: no such directory"},
		{"target is a file", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: file, VolumeCapability: mountCap(), VolumeContext: remote}, codes.FailedPrecondition, "not a directory"},
		{"target is not empty", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: full, VolumeCapability: mountCap(), VolumeContext: remote}, codes.FailedPrecondition, "not an empty directory: it holds x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.NodePublishVolume(context.Background(), tt.req)
			if status.Code(err) != tt.code || !strings.Contains(status.Convert(err).Message(), tt.msg) {
				t.Errorf("got %v; want %v saying %q", err, tt.code, tt.msg)
			}
		})
	}
	if _, err := os.Stat(dir + "/t"); !os.IsNotExist(err) {
		t.Errorf("a refused publish left its target: %v", err)
	}
}

// TestUnpublishIdempotent: unpublishing what is not published (the target
// gone, or never there) succeeds, and a missing field is InvalidArgument.
func TestUnpublishIdempotent(t *testing.T) {
	d := newTestDriver(t)
	target := filepath.Join(t.TempDir(), "target")
	for range 2 {
		if _, err := d.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: target}); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(target, 0o750) // an empty directory the CO made: removed
	if _, err := d.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("target left: %v", err)
	}
	for _, req := range []*csi.NodeUnpublishVolumeRequest{{TargetPath: target}, {VolumeId: "v"}} {
		if _, err := d.NodeUnpublishVolume(context.Background(), req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%v: got %v, want InvalidArgument", req, err)
		}
	}
}

// TestBusyTarget: a second operation on a target while one is in flight
// is refused with Aborted, as the spec asks, and the target is free after.
func TestBusyTarget(t *testing.T) {
	d := newTestDriver(t)
	release, err := d.lock("/t/a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t/a/"})
	if status.Code(err) != codes.Aborted {
		t.Errorf("got %v, want Aborted", err)
	}
	release()
	if release, err := d.lock("/t/a"); err != nil {
		t.Errorf("after release: %v", err)
	} else {
		release()
	}
}

func TestIdentity(t *testing.T) {
	d := newTestDriver(t)
	info, err := d.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != DefaultName {
		t.Errorf("GetPluginInfo: %v, %v", info, err)
	}
	if p, err := d.Probe(context.Background(), &csi.ProbeRequest{}); err != nil || !p.GetReady().GetValue() {
		t.Errorf("Probe: %v, %v", p, err)
	}
	if n, err := d.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{}); err != nil || n.GetNodeId() != "node-1" {
		t.Errorf("NodeGetInfo: %v, %v", n, err)
	}
	if _, err := New(Config{NodeID: "n", StateDir: t.TempDir(), Exe: "/bin/true", UID: 0}); err == nil {
		t.Error("New lets servers run as root")
	}
}
