package diskcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// An entry file holds one value (or one range of one) and says what it is:
//
//	magic     8 bytes  "zfusedc1"
//	dataCRC   4 bytes  CRC-32C of data
//	dataLen   8 bytes
//	idLen     2 bytes, id      (source, key and range: see id)
//	verLen    2 bytes, version (as the store gave it; may be empty)
//	headCRC   4 bytes  CRC-32C of everything above
//	data      dataLen bytes
//
// Integers are little-endian. Both checksums and the length are checked on
// every read, so a file torn by a crash or a full disk is never served.
const magic = "zfusedc1"

// fixedLen is the header without id and version.
const fixedLen = len(magic) + 4 + 8 + 2 + 2 + 4

// errBadEntry means an entry file failed validation.
var errBadEntry = errors.New("diskcache: invalid entry file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// headerLen is the length of the header of an entry with this id and version.
func headerLen(id, version string) int { return fixedLen + len(id) + len(version) }

// appendHeader appends the header of an entry holding data.
func appendHeader(b []byte, id, version string, data []byte) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(data, castagnoli))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
	b = binary.LittleEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(version)))
	b = append(b, version...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// parseEntry checks an entry file's contents and returns its parts. data
// is a slice of b.
func parseEntry(b []byte) (id, version string, data []byte, err error) {
	bad := func(what string) (string, string, []byte, error) {
		return "", "", nil, fmt.Errorf("%w: %s", errBadEntry, what)
	}
	if len(b) < fixedLen || string(b[:len(magic)]) != magic {
		return bad("no header")
	}
	p := len(magic)
	dataCRC := binary.LittleEndian.Uint32(b[p:])
	dataLen := binary.LittleEndian.Uint64(b[p+4:])
	p += 12
	idLen := int(binary.LittleEndian.Uint16(b[p:]))
	p += 2
	if len(b) < p+idLen+2+4 {
		return bad("short header")
	}
	id = string(b[p : p+idLen])
	p += idLen
	verLen := int(binary.LittleEndian.Uint16(b[p:]))
	p += 2
	if len(b) < p+verLen+4 {
		return bad("short header")
	}
	version = string(b[p : p+verLen])
	p += verLen
	if crc32.Checksum(b[:p], castagnoli) != binary.LittleEndian.Uint32(b[p:]) {
		return bad("header checksum mismatch")
	}
	p += 4
	if uint64(len(b)-p) != dataLen {
		return bad(fmt.Sprintf("%d bytes of data, header says %d", len(b)-p, dataLen))
	}
	data = b[p:]
	if crc32.Checksum(data, castagnoli) != dataCRC {
		return bad("data checksum mismatch")
	}
	return id, version, data, nil
}
