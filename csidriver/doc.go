// Package csidriver is zfuse's CSI node plugin (zfuse csi): the Identity
// and Node services of the Container Storage Interface, over gRPC, for
// Kubernetes pods that read Zarr stores through zfuse without privileges.
//
// The one fact to know: the plugin is the only privileged part. It opens
// /dev/fuse and mounts the descriptor read-only at the target path
// (mount.go), then hands the descriptor to a server, zfuse mount SOURCE
// /dev/fd/3, that runs as an unprivileged user with no capabilities
// (server.go). A server outlives the plugin that started it: each
// published target has a record in the state directory (state.go), from
// which a plugin started later (an upgrade) finds and unpublishes it.
//
// A volume's settings are its attributes (attributes.go): "source" and
// zfuse mount's flags by name; S3 credentials come from its secrets. The
// gRPC services are in driver.go (Identity, serving) and node.go (Node).
// There is no controller: volumes are static PersistentVolumes or inline
// ephemeral volumes.
//
// It does not import go-fuse: the FUSE protocol is the server's business.
package csidriver
