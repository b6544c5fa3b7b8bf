package integration

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// TestCSISanity runs csi-sanity (kubernetes-csi/csi-test's sanity
// package) against a real zfuse csi process: the Identity and Node specs,
// with real mounts served by real servers of a store zarr-python wrote.
//
// zfuse csi has no controller: its volumes are static PersistentVolumes,
// which an administrator writes, or inline ephemeral ones. The specs that
// publish a volume first create one through a controller, so the test
// serves a stand-in for the administrator (staticVolumes) at the
// controller address: its CreateVolume returns a volume whose attributes
// are the test parameters, as a PV's volumeAttributes are. The controller
// specs ("Controller Server") would test only that stand-in, and are
// skipped.
func TestCSISanity(t *testing.T) {
	needCSI(t)
	if os.Getenv("ZFUSE_SERVING") != "" {
		t.Skip("the sanity specs check the gRPC API, the same on every serving path; TestCSIPublish runs on each")
	}
	data := openToAll(t, t.TempDir())
	store := writeCSIStore(t, data, "era5.zarr")
	p := startPlugin(t, data, "")
	ctl := serveStaticVolumes(t, filepath.Join(filepath.Dir(p.Sock), "controller.sock"), p.Identity)

	dir := t.TempDir()
	cfg := sanity.NewTestConfig()
	cfg.Address = p.Sock
	cfg.ControllerAddress = ctl
	cfg.TargetPath = filepath.Join(dir, "csi-mount") // sanity makes it; the driver makes TargetPath/target
	cfg.StagingPath = filepath.Join(dir, "csi-staging")
	cfg.TestVolumeParameters = map[string]string{"source": store}
	cfg.IdempotentCount = 2

	sc := sanity.GinkgoTest(&cfg)
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	suite.SkipStrings = append(suite.SkipStrings, "Controller Server")
	reporter.Succinct, reporter.NoColor = !testing.Verbose(), true
	ginkgo.RunSpecs(t, "zfuse csi sanity", suite, reporter)
	sc.Finalize()
	if rs := p.records(t); len(rs) != 0 {
		t.Errorf("records left after the sanity specs: %+v", rs)
	}
	if pid := serverPid(t, data); pid != 0 {
		t.Errorf("a server runs after the sanity specs (pid %d)", pid)
	}
}

// staticVolumes is a controller that only hands out static volumes: the
// administrator's side of a PersistentVolume, whose volumeAttributes are
// CreateVolume's parameters.
type staticVolumes struct {
	csi.UnimplementedControllerServer
}

func (staticVolumes) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "static-" + req.GetName(), VolumeContext: req.GetParameters()}}, nil
}

func (staticVolumes) DeleteVolume(context.Context, *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	return &csi.DeleteVolumeResponse{}, nil
}

func (staticVolumes) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}

// pluginIdentity answers the Identity calls that csi-sanity also makes
// at the controller address with the plugin's own answers.
type pluginIdentity struct {
	csi.UnimplementedIdentityServer
	c csi.IdentityClient
}

func (p pluginIdentity) GetPluginInfo(ctx context.Context, req *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return p.c.GetPluginInfo(ctx, req)
}

func (p pluginIdentity) GetPluginCapabilities(ctx context.Context, req *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return p.c.GetPluginCapabilities(ctx, req)
}

func (p pluginIdentity) Probe(ctx context.Context, req *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return p.c.Probe(ctx, req)
}

// serveStaticVolumes serves staticVolumes at the unix socket sock until
// the test ends, with the Identity of id, and returns its address.
func serveStaticVolumes(t *testing.T, sock string, id csi.IdentityClient) string {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterControllerServer(srv, staticVolumes{})
	csi.RegisterIdentityServer(srv, pluginIdentity{c: id})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}
