package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/zfuse/zfuse/csidriver"
)

// runCSI is zfuse csi: the CSI node plugin of package csidriver, serving
// at --endpoint until SIGINT/SIGTERM. Its servers, zfuse mount processes
// running as --mounter-uid, outlive it (docs/kubernetes.md).
func runCSI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse csi", flag.ContinueOnError)
	endpoint := fl.String("endpoint", "unix:///csi/csi.sock", "serve the CSI gRPC services at this unix:///PATH socket")
	nodeID := fl.String("node-id", "", "this node's ID, as NodeGetInfo reports it (in Kubernetes: spec.nodeName); required")
	name := fl.String("driver-name", csidriver.DefaultName, "the driver's name, as the CSIDriver object and PersistentVolumes name it")
	stateDir := fl.String("state-dir", "/var/lib/zfuse-csi", "keep the records of published volumes and their servers' logs here, where a restarted plugin finds them")
	uid := fl.Int("mounter-uid", 65534, "run each volume's server (zfuse mount) as this user: not root")
	gid := fl.Int("mounter-gid", 65534, "run each volume's server as this group")
	cgroup := fl.String("server-cgroup", "", "a cgroup v2 directory (e.g. /sys/fs/cgroup/zfuse-csi): run each server in a cgroup of its own under it, outside the plugin's, with memory.max set to the volume's memory-limit; \"\": in the plugin's cgroup")
	var localDirs stringList
	fl.Var(&localDirs, "local-dir", "a directory of this node whose stores volumes may mount as local sources (repeatable); none: only http(s):// and s3:// sources")
	level := levelFlag(slog.LevelInfo)
	fl.Var(&level, "log-level", "log level, `debug|info|warn|error`")
	if err := parseFlags(fl, args, 0, stdout); err != nil { // usage.go
		return err
	}
	switch {
	case *nodeID == "":
		return badUsage("csi", "csi: --node-id is required")
	case os.Geteuid() != 0:
		return errors.New("zfuse csi mounts /dev/fuse for its servers, and needs root")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.Level(level)}))
	d, err := csidriver.New(csidriver.Config{Name: *name, Version: version(), NodeID: *nodeID, StateDir: *stateDir,
		Exe: exe, UID: *uid, GID: *gid, Cgroup: *cgroup, LocalDirs: localDirs, Log: log})
	if err != nil {
		return err
	}
	return d.Serve(ctx, *endpoint)
}
