// Command zfuse-csi is zfuse's CSI node plugin (package csidriver), which
// zfuse csi runs: it serves the CSI gRPC services at --endpoint until
// SIGINT or SIGTERM, and starts each published volume's server, zfuse
// mount from the zfuse binary beside it, as --mounter-uid. The servers
// outlive it (docs/kubernetes.md).
//
// It is a binary of its own so that what it links (gRPC, protobuf, the
// CSI spec: 13 MB of code) is in no mount's memory: a server that linked
// them mapped 7 to 10 MiB more of its binary, on every mount.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/zfuse/zfuse/csidriver"
	"github.com/zfuse/zfuse/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(os.Stderr, err))
}

const summary = "serve the CSI node plugin that mounts zfuse volumes in Kubernetes pods (docs/kubernetes.md)"

// errUsage is a command line the plugin does not run (exit status 2).
var errUsage = errors.New("usage")

// run is the plugin with the arguments args, as zfuse csi ARGS runs it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("zfuse csi", flag.ContinueOnError)
	endpoint := fl.String("endpoint", "unix:///csi/csi.sock", "serve the CSI gRPC services at this unix:///PATH socket")
	nodeID := fl.String("node-id", "", "this node's ID, as NodeGetInfo reports it (in Kubernetes: spec.nodeName); required")
	name := fl.String("driver-name", csidriver.DefaultName, "the driver's name, as the CSIDriver object and PersistentVolumes name it")
	stateDir := fl.String("state-dir", "/var/lib/zfuse-csi", "keep the records of published volumes and their servers' logs here, where a restarted plugin finds them")
	uid := fl.Int("mounter-uid", 65534, "run each volume's server (zfuse mount) as this user: not root")
	gid := fl.Int("mounter-gid", 65534, "run each volume's server as this group")
	cgroup := fl.String("server-cgroup", "", "a cgroup v2 directory (e.g. /sys/fs/cgroup/zfuse-csi): run each server in a cgroup of its own under it, outside the plugin's, with memory.max set to the volume's memory-limit; \"\": in the plugin's cgroup")
	var localDirs dirList
	fl.Var(&localDirs, "local-dir", "a directory of this node whose stores volumes may mount as local sources (repeatable); none: only http(s):// and s3:// sources")
	level := fl.String("log-level", "info", "log level, `debug|info|warn|error`")
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	bad := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "zfuse csi: "+format+"\nusage: zfuse csi [flags]\nRun \"zfuse help csi\" for its flags.\n", args...)
		return errUsage
	}
	var l slog.Level
	switch err := fl.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintf(stdout, "usage: zfuse csi [flags]\n\n%s.\n\nflags (-name or --name):\n", summary)
		fl.SetOutput(stdout)
		fl.PrintDefaults()
		printAttributes(stdout)
		return nil
	case err != nil:
		return bad("%v", err)
	case fl.NArg() != 0:
		return bad("csi takes no arguments, got %q", fl.Args())
	case l.UnmarshalText([]byte(*level)) != nil:
		return bad("--log-level %q: want debug, info, warn or error", *level)
	case *nodeID == "":
		return bad("--node-id is required")
	case os.Geteuid() != 0:
		return errors.New("zfuse csi mounts /dev/fuse for its servers, and needs root")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	zfuse := filepath.Join(filepath.Dir(exe), "zfuse")
	if _, err := os.Stat(zfuse); err != nil {
		return fmt.Errorf("the volumes' servers are zfuse mount, from %s beside the plugin: %w", zfuse, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l}))
	d, err := csidriver.New(csidriver.Config{Name: *name, Version: version.String(), NodeID: *nodeID, StateDir: *stateDir,
		Exe: zfuse, UID: *uid, GID: *gid, Cgroup: *cgroup, LocalDirs: localDirs, Log: log})
	if err != nil {
		return err
	}
	return d.Serve(ctx, *endpoint)
}

// exitStatus reports err, run's result, on stderr and returns the exit
// status: 0 for none, 2 for a bad command line (already reported), 1 for
// any other error.
func exitStatus(stderr io.Writer, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintln(stderr, "zfuse csi:", err)
	return 1
}

// printAttributes lists what a volume's attributes may set: its source,
// and the flags of zfuse mount the driver takes (those it refuses, why).
func printAttributes(w io.Writer) {
	taken, refused := csidriver.Flags()
	fmt.Fprintf(w, "\nvolume attributes: source (the store: a directory, an http(s):// or s3:// URL), and the flags of zfuse mount:\n")
	for _, name := range slices.Sorted(maps.Keys(taken)) {
		kind := "VALUE"
		if taken[name] {
			kind = "true|false"
		}
		fmt.Fprintf(w, "  %s=%s\n", name, kind)
	}
	fmt.Fprintf(w, "flags of zfuse mount no volume may set:\n")
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		fmt.Fprintf(w, "  %s: %s\n", name, refused[name])
	}
}

// A dirList is a repeatable flag: --local-dir.
type dirList []string

func (l *dirList) String() string     { return strings.Join(*l, ",") }
func (l *dirList) Set(s string) error { *l = append(*l, s); return nil }
