package csidriver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zfuse/zfuse/store"
)

// NodePublishVolume mounts the volume at the target path and starts its
// server: it checks the request and the volume's attributes (refusing bad
// ones with InvalidArgument before anything is mounted), makes the target
// an empty directory, mounts /dev/fuse there read-only, starts the server
// on the descriptor, and writes the record. Publishing a volume that is
// published and served at the target already does nothing.
func (d *Driver) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if err := checkPublish(req); err != nil {
		return nil, err
	}
	s, err := parseSettings(req.GetVolumeContext(), req.GetSecrets(), d.cfg.LocalDirs)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	release, err := d.lock(target)
	if err != nil {
		return nil, err
	}
	defer release()

	switch done, err := d.published(id, target, s); {
	case err != nil:
		return nil, err
	case done:
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if !isRemote(s.Source) {
		if fi, err := os.Stat(s.Source); err != nil || !fi.IsDir() {
			return nil, status.Errorf(codes.NotFound, "source %s: no such directory on this node", s.Source)
		}
	}
	created, err := prepareTarget(target)
	switch {
	case errors.Is(err, errTargetBusy), errors.Is(err, errTargetType):
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	case err != nil:
		return nil, status.Errorf(codes.Internal, "target: %v", err)
	}
	r := &record{VolumeID: id, Target: filepath.Clean(target), Source: s.Source, Flags: s.Flags}
	if err := d.mountAndServe(ctx, r, s); err != nil {
		if created {
			removeTarget(target)
		}
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkPublish checks the fields of a publish request that the spec
// requires, and that the volume is one a file system serves.
func checkPublish(req *csi.NodePublishVolumeRequest) error {
	c := req.GetVolumeCapability()
	switch {
	case req.GetVolumeId() == "":
		return status.Error(codes.InvalidArgument, "no volume ID")
	case req.GetTargetPath() == "":
		return status.Error(codes.InvalidArgument, "no target path")
	case !filepath.IsAbs(req.GetTargetPath()):
		return status.Errorf(codes.InvalidArgument, "target path %q is not absolute", req.GetTargetPath())
	case c == nil:
		return status.Error(codes.InvalidArgument, "no volume capability")
	case c.GetBlock() != nil:
		return status.Error(codes.InvalidArgument, "block access: a zfuse volume is a read-only file system (access type mount)")
	case c.GetMount() == nil:
		return status.Error(codes.InvalidArgument, "volume capability: want access type mount")
	}
	for _, f := range c.GetMount().GetMountFlags() {
		if f != "ro" {
			return status.Errorf(codes.InvalidArgument, "mount option %q: zfuse volumes take their settings as volume attributes (the mount is read-only whatever the options)", f)
		}
	}
	return nil
}

// published looks at what the target holds already. It returns done when
// the volume is published and served there with the same settings, an
// error when another volume or other settings are, and otherwise clears
// what an earlier publish left (a mount whose server died, a mount whose
// publish never finished) so that the caller publishes anew.
func (d *Driver) published(id, target string, s Settings) (done bool, err error) {
	r, err := d.state.load(target)
	if err != nil {
		return false, status.Error(codes.Internal, err.Error())
	}
	m, mounted := mountAt(target)
	switch {
	case r == nil && mounted && isOurs(m):
		d.log.Warn("clearing a mount whose publish did not finish", "target", target, "source", m.Source)
	case r == nil:
		return false, nil
	case r.VolumeID != id:
		return false, status.Errorf(codes.AlreadyExists, "target %s: volume %s is published there", target, r.VolumeID)
	case mounted && isOurs(m) && (proc{pid: r.Pid, start: r.Start}).alive():
		if !r.sameSettings(s) {
			return false, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with other attributes", id, target)
		}
		return true, nil
	default:
		d.log.Warn("publishing again: the server or the mount of the volume is gone", "volume_id", id, "target", target, "pid", r.Pid)
	}
	if err := d.teardown(target, r); err != nil {
		return false, err
	}
	return false, nil
}

// mountAndServe mounts r's target and starts its server, and records
// both; on failure nothing is left mounted or running.
func (d *Driver) mountAndServe(ctx context.Context, r *record, s Settings) error {
	dev, err := fuseMount(r.Target, r.VolumeID, d.cfg.UID, d.cfg.GID)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if d.cfg.Cgroup != "" {
		r.Cgroup = filepath.Join(d.cfg.Cgroup, key(r.Target))
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	p, err := startServer(ctx, d.server, s, dev, d.state.logPath(r.Target), r.Cgroup)
	dev.Close() // the server holds it now, or nobody does
	if err != nil {
		unmount(r.Target)
		d.removeCgroup(r)
		d.state.remove(r.Target)
		return status.Errorf(codes.FailedPrecondition, "source %s cannot be served: %v", store.Redact(s.Source), err)
	}
	r.Pid, r.Start, r.Time = p.pid, p.start, time.Now().UTC()
	if err := d.state.save(r); err != nil {
		d.teardown(r.Target, r)
		return status.Error(codes.Internal, err.Error())
	}
	d.log.Info("published", "volume_id", r.VolumeID, "target", r.Target, "source", store.Redact(s.Source), "pid", p.pid, "uid", d.cfg.UID)
	return nil
}

// NodeUnpublishVolume unmounts the target, waits for its server to exit
// (bounded; see proc.stop), and removes the target directory and the
// record. A target with nothing published is no error: unpublish is
// idempotent.
func (d *Driver) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	switch {
	case id == "":
		return nil, status.Error(codes.InvalidArgument, "no volume ID")
	case target == "":
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	release, err := d.lock(target)
	if err != nil {
		return nil, err
	}
	defer release()
	r, err := d.state.load(target)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if r != nil && r.VolumeID != id {
		return nil, status.Errorf(codes.FailedPrecondition, "target %s holds volume %s, not %s", target, r.VolumeID, id)
	}
	if m, ok := mountAt(target); ok && !isOurs(m) {
		return nil, status.Errorf(codes.FailedPrecondition, "target %s: %s (%s) is mounted there, not a zfuse volume", target, m.Source, m.FSType)
	}
	if err := d.teardown(target, r); err != nil {
		return nil, err
	}
	if err := removeTarget(target); err != nil {
		return nil, status.Errorf(codes.Internal, "remove target: %v", err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// teardown unmounts target, stops the server of r (nil: no record) and
// removes its cgroup and record.
func (d *Driver) teardown(target string, r *record) error {
	mounted, err := unmount(target)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if r != nil {
		signalled, err := proc{pid: r.Pid, start: r.Start}.stop()
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if signalled {
			d.log.Warn("the server did not exit after the unmount: it was stopped with a signal", "volume_id", r.VolumeID, "target", target, "pid", r.Pid)
		}
		d.removeCgroup(r)
		if err := d.state.remove(target); err != nil {
			return status.Error(codes.Internal, err.Error())
		}
	}
	if mounted || r != nil {
		d.log.Info("unpublished", "target", target, "was_mounted", mounted)
	}
	return nil
}

// removeCgroup removes r's cgroup, if it has one; its server has exited.
func (d *Driver) removeCgroup(r *record) {
	if r.Cgroup == "" {
		return
	}
	if err := os.Remove(r.Cgroup); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("cannot remove the server's cgroup", "cgroup", r.Cgroup, "err", err)
	}
}

// NodeGetCapabilities returns none: no staging (a volume is one mount per
// target), no stats, no expansion.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo returns the node's ID. There is no limit on volumes per
// node and no topology: every node reaches every store it is given.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.cfg.NodeID}, nil
}

// isRemote reports whether source is a URL rather than a directory.
func isRemote(source string) bool { return strings.Contains(source, "://") }
