// Package fusemount serves a tree.Tree through go-fuse: Mount mounts it
// read-only at a directory, and its nodes answer the kernel's requests
// with what the Tree says each path serves.
//
// The one fact to know: the Tree decides what every path holds; this
// package decides only how the bytes reach the reader (the serving path,
// see Serving) and keeps the kernel's caches true to the Tree. Files are
// immutable for the life of the mount (unless the Tree refreshes): a file
// that changes in the store is a new inode, never new bytes in an old one.
//
//   - node.go: the directory and file nodes, and the read-only refusals
//   - mount.go: Mount, its options, and the mount point's device
//   - serve.go: the serving paths (passthrough, no-open, open) and the
//     counts of what reached the daemon (ServeStats)
//   - place.go: pushing prefetched chunks into the page cache
//   - look.go, guard.go: lookups from a child process, and the abort of
//     the connection when this process dies, so that no reader hangs
//   - latency.go: the histogram of READ service times
package fusemount
