package csidriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// DefaultName is the driver's name, as CSIDriver objects and
// PersistentVolumes name it.
const DefaultName = "csi.zfuse.github.io"

// Config configures a Driver.
type Config struct {
	Name    string // the driver's name; "" is DefaultName
	Version string // the vendor version GetPluginInfo reports
	NodeID  string // the node's ID, as NodeGetInfo reports it; required
	// StateDir holds the records of published volumes (state.go); a
	// plugin started with the state directory of another finds its
	// volumes.
	StateDir string
	// Exe is the zfuse binary the servers run (zfuse mount).
	Exe string
	// UID and GID are the user the servers run as: not root.
	UID, GID int
	// Cgroup, if not "", is a cgroup v2 directory: each server runs in a
	// child of it, created for it (with memory.max set to the volume's
	// memory-limit where the memory controller is enabled), outside the
	// plugin's cgroup, so that a container runtime stopping the plugin's
	// container does not stop the servers.
	Cgroup string
	// LocalDirs are the directories in which local sources may lie
	// (absolute); none: volumes may only have remote sources.
	LocalDirs []string
	// StartTimeout bounds how long a server may take to serve (opening a
	// remote store, reading its metadata); 0 is two minutes.
	StartTimeout time.Duration
	Log          *slog.Logger // nil discards
}

// A Driver is a CSI node plugin: the Identity and Node services. It is
// safe for concurrent use; operations on one target path run one at a
// time (a second at once is refused with Aborted, as the spec asks).
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer

	cfg    Config       // immutable after New
	state  *stateDir    // immutable after New
	server serverConfig // immutable after New
	log    *slog.Logger

	mu   sync.Mutex          // guards busy
	busy map[string]struct{} // targets with an operation in flight
}

// New returns the driver of cfg, after looking at the records that a
// plugin before it left in cfg.StateDir: volumes whose server still
// serves are kept, records of volumes that are neither mounted nor served
// are dropped, and the rest wait for their unpublish (see recover).
func New(cfg Config) (*Driver, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.NodeID == "":
		return nil, errors.New("csidriver: no node ID")
	case cfg.Exe == "":
		return nil, errors.New("csidriver: no zfuse binary for the servers")
	case cfg.UID == 0:
		return nil, errors.New("csidriver: the servers may not run as root (uid 0)")
	}
	for i, d := range cfg.LocalDirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("csidriver: local directory %q is not absolute", d)
		}
		cfg.LocalDirs[i] = filepath.Clean(d)
	}
	st, err := openState(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	if cfg.Cgroup != "" {
		if err := os.MkdirAll(cfg.Cgroup, 0o755); err != nil {
			return nil, fmt.Errorf("csidriver: server cgroup: %w", err)
		}
	}
	d := &Driver{cfg: cfg, state: st, log: log, busy: map[string]struct{}{},
		server: serverConfig{exe: cfg.Exe, uid: cfg.UID, gid: cfg.GID, cgroup: cfg.Cgroup, log: log}}
	if err := d.recover(); err != nil {
		return nil, err
	}
	return d, nil
}

// recover goes through the records left by an earlier plugin. A volume
// that is mounted and served is the new plugin's to unpublish. One whose
// server has died stays mounted (its readers get errors: a pod's
// containers keep the mount they started with, so mounting again would
// not reach them) until its unpublish, or a publish again, clears it. A
// server whose mount is gone is stopped, and a record of neither dropped.
func (d *Driver) recover() error {
	rs, bad, err := d.state.all()
	if err != nil {
		return err
	}
	for _, p := range bad {
		d.log.Warn("ignoring a state file that holds no record", "path", p)
	}
	for _, r := range rs {
		p := proc{pid: r.Pid, start: r.Start}
		m, mounted := mountAt(r.Target)
		mounted = mounted && isOurs(m)
		attrs := []any{"volume_id", r.VolumeID, "target", r.Target, "pid", r.Pid}
		switch alive := p.alive(); {
		case alive && mounted:
			d.log.Info("found a published volume, served", attrs...)
		case mounted:
			d.log.Warn("found a published volume whose server has exited: its readers get errors until it is published again", attrs...)
		default:
			if alive {
				if _, err := p.stop(); err != nil {
					d.log.Warn("cannot stop the server of a volume no longer mounted", append(attrs, "err", err)...)
					continue
				}
			}
			d.removeCgroup(r)
			if err := d.state.remove(r.Target); err != nil {
				return err
			}
			d.log.Info("dropped the record of a volume no longer mounted", attrs...)
		}
	}
	return nil
}

// Serve serves the driver's gRPC services at endpoint (unix:///PATH, as
// the kubelet and the node-driver-registrar name it) until ctx ends, then
// finishes the calls in flight and returns. A socket file left at PATH by
// an earlier plugin is replaced.
func (d *Driver) Serve(ctx context.Context, endpoint string) error {
	path, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || path == "" {
		return fmt.Errorf("csidriver: endpoint %q: want unix:///PATH", endpoint)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("csidriver: endpoint: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("csidriver: endpoint: %w", err)
	}
	defer os.Remove(path)
	srv := grpc.NewServer(grpc.UnaryInterceptor(d.logCall))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	d.log.Info("serving", "endpoint", endpoint, "driver", d.cfg.Name, "node_id", d.cfg.NodeID)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	srv.GracefulStop() // a publish in flight finishes; its server outlives us
	<-served
	d.log.Info("stopped; published volumes stay mounted and served", "endpoint", endpoint)
	return nil
}

// logCall logs each call: publishes and unpublishes at Info (they change
// the node), the rest at Debug; failures with their error. Requests are
// never logged: they carry secrets.
func (d *Driver) logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	t := time.Now()
	resp, err := h(ctx, req)
	op := info.FullMethod[strings.LastIndexByte(info.FullMethod, '/')+1:]
	attrs := []any{"op", op, "ms", time.Since(t).Milliseconds()}
	if v, ok := req.(interface{ GetVolumeId() string }); ok && v.GetVolumeId() != "" {
		attrs = append(attrs, "volume_id", v.GetVolumeId())
	}
	if v, ok := req.(interface{ GetTargetPath() string }); ok && v.GetTargetPath() != "" {
		attrs = append(attrs, "target", v.GetTargetPath())
	}
	level := slog.LevelDebug
	if strings.HasPrefix(op, "NodePublish") || strings.HasPrefix(op, "NodeUnpublish") {
		level = slog.LevelInfo
	}
	if err != nil {
		d.log.Warn("call failed", append(attrs, "code", status.Code(err).String(), "err", status.Convert(err).Message())...)
	} else {
		d.log.Log(ctx, level, "call", attrs...)
	}
	return resp, err
}

// GetPluginInfo returns the driver's name and version.
func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.cfg.Name, VendorVersion: d.cfg.Version}, nil
}

// GetPluginCapabilities returns none: there is no controller service
// (volumes are static or inline ephemeral) and no topology.
func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe reports the plugin ready: New has done all it needs.
func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// lock marks target busy until the returned function is called; a second
// operation on it meanwhile is refused with Aborted.
func (d *Driver) lock(target string) (func(), error) {
	target = filepath.Clean(target)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.busy[target]; ok {
		return nil, status.Errorf(codes.Aborted, "an operation on target %s is in progress", target)
	}
	d.busy[target] = struct{}{}
	return func() {
		d.mu.Lock()
		delete(d.busy, target)
		d.mu.Unlock()
	}, nil
}
