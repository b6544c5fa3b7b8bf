// Package bench is zfuse bench, the one harness: it measures zfuse mount
// against baselines on this machine (Run: the matrix of readers, chunk
// sizes, codecs, serving paths and transports, read through mounts of
// this binary, the FUSE floor, the uncompressed array and the readers
// decoding themselves), and zfuse compress against the C libraries
// (RunCompress). The command (cmd/zfuse) keeps the flags.
//
// Its parts: the stores and the readers (matrix.go, readers.go; the
// Python readers in bench.py), the mounts and the floor as processes of
// their own (mount.go, floor.go; the floor's server is fusemount/floor),
// the remote reader (remote.go), the report and its targets (report.go),
// and what any bench needs: the file tool that times reading files
// (ReadEpochs), the process under measurement (Process, LineLog, and what
// it used, from /proc), rates over rounds and epochs with their medians,
// ranges and paired ratios (Results, RoundOrder), and the tables of a
// report (Table, Target).
//
// The one fact to know: every mount and floor it reads is a process of its
// own, this binary run again, so that the server never shares CPUs with
// the reader; what it imports of zfuse is what it measures and reports.
package bench
