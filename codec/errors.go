package codec

import (
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
)

// errorsJoinCorrupt turns a library's decode error into one that matches
// ErrCorrupt (or ErrChecksum for checksum failures), keeping the original
// in the chain for the log line.
func errorsJoinCorrupt(err error) error {
	switch {
	case errors.Is(err, zlib.ErrChecksum), errors.Is(err, gzip.ErrChecksum):
		return errors.Join(ErrChecksum, err)
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	}
	return errors.Join(ErrCorrupt, err)
}
