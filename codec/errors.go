package codec

import (
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
)

// errorsJoinCorrupt turns a library's decode error into one that matches
// ErrCorrupt (or ErrChecksum for checksum failures), keeping the original
// in the chain for the log line. klauspost's gzip and zlib packages alias
// the standard library's ErrChecksum values.
func errorsJoinCorrupt(err error) error {
	switch {
	case errors.Is(err, zlib.ErrChecksum), errors.Is(err, gzip.ErrChecksum),
		errors.Is(err, bzip2.StructuralError("block checksum mismatch")),
		errors.Is(err, bzip2.StructuralError("file checksum mismatch")):
		return errors.Join(ErrChecksum, err)
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return errors.Join(ErrCorrupt, err)
}
