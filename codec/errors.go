package codec

import (
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// libraryErr turns a library's decode error into one that matches
// ErrCorrupt (or ErrChecksum for checksum failures), keeping the original
// in the chain for the log line. klauspost's gzip and zlib packages alias
// the standard library's ErrChecksum values.
func libraryErr(err error) error {
	switch {
	case errors.Is(err, zlib.ErrChecksum), errors.Is(err, gzip.ErrChecksum),
		errors.Is(err, bzip2.StructuralError("block checksum mismatch")),
		errors.Is(err, bzip2.StructuralError("file checksum mismatch")):
		return both(ErrChecksum, err)
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return both(ErrCorrupt, err)
}

// both is an error matching sentinel and err, on one line ("codec: corrupt
// input: unexpected EOF"). errors.Join would put a newline between them,
// and so inside the log line of the failed read.
func both(sentinel, err error) error {
	return fmt.Errorf("%w: %w", sentinel, err)
}
