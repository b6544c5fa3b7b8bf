package store

import "time"

// A Hook is told of each request a backend makes of what holds its values,
// once it is answered, for metrics or tracing: op is "read" (a whole
// value), "read_range", "stat", "list" or "open" (a file opened for the
// kernel to read, FileOpener); key is the key or the directory; n the
// bytes of value the answer held; d how long it took, waiting for a free
// connection and retries included; err its error (nil, or for instance one
// satisfying errors.Is(err, fs.ErrNotExist) or ErrNotModified: the hook
// decides what counts as a failure).
//
// Requests are what reach the file system or the server, not calls: what
// a backend answers from what it has seen (an HTTP store's Stat of a size
// a response gave, a metadata document read once) is no request, and one
// call may make several (an S3 listing of many pages). A Hook must be safe
// for concurrent use.
type Hook func(op, key string, n int64, d time.Duration, err error)

// Done tells h, if it is set, of the request op of key that began at start
// and was answered with n bytes of value and err.
func (h Hook) Done(op, key string, start time.Time, n int, err error) {
	if h != nil {
		h(op, key, int64(n), time.Since(start), err)
	}
}

// ReadOp is the op of a read of [off, off+n): "read" for all of the value
// (n < 0), else "read_range".
func ReadOp(n int64) string {
	if n < 0 {
		return "read"
	}
	return "read_range"
}
