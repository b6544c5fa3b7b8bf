// Package netcdf writes the header of a netCDF classic file (the formats
// CDF-1, CDF-2 "64-bit offset" and CDF-5 "64-bit data") and says where
// each variable's values lie in the file, so that a file can be served
// whose data part is produced elsewhere, on demand.
//
// The one fact to know: a classic file is its header, then each
// variable's values, one variable after the other in header order, each
// big-endian in C order (the last dimension varying fastest) and padded to
// a multiple of 4 bytes. A File describes dimensions, attributes and
// variables; Encode checks it against the format and netCDF-C's limits and
// returns its Layout: the header bytes and each variable's Extent.
// Layout.Segments maps any byte range of the file onto the header, the
// variables' values and their padding. The layout is netCDF-C's own (no
// free space in the header, variables 4-byte aligned one after the
// other), so a file netCDF-C writes for the same File is the same file.
//
// There is no record (unlimited) dimension: every dimension has a fixed,
// positive length, and numrecs is 0.
//
// The package imports nothing of zfuse. Its values are safe for
// concurrent reads once built.
package netcdf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A Format is the version byte of a classic file's magic number.
type Format byte

const (
	CDF1 Format = 1 // classic: 32-bit offsets
	CDF2 Format = 2 // 64-bit offset: 64-bit begins, variables of up to 4 GiB
	CDF5 Format = 5 // 64-bit data: 64-bit counts and sizes, unsigned and 64-bit integer types
)

// String names the format as netCDF's documentation does: "CDF-2".
func (f Format) String() string {
	switch f {
	case CDF1, CDF2, CDF5:
		return fmt.Sprintf("CDF-%d", f)
	}
	return fmt.Sprintf("Format(%d)", byte(f))
}

// Describe says what ncdump -k calls the format: "64-bit offset".
func (f Format) Describe() string {
	switch f {
	case CDF1:
		return "classic"
	case CDF2:
		return "64-bit offset"
	case CDF5:
		return "cdf5"
	}
	return f.String()
}

// A Type is an external (nc_type) data type: the tag the header writes.
type Type int32

const (
	Byte   Type = 1  // 8-bit signed integer
	Char   Type = 2  // 8-bit character (text)
	Short  Type = 3  // 16-bit signed integer
	Int    Type = 4  // 32-bit signed integer
	Float  Type = 5  // IEEE single precision
	Double Type = 6  // IEEE double precision
	UByte  Type = 7  // CDF-5: 8-bit unsigned integer
	UShort Type = 8  // CDF-5: 16-bit unsigned integer
	UInt   Type = 9  // CDF-5: 32-bit unsigned integer
	Int64  Type = 10 // CDF-5: 64-bit signed integer
	UInt64 Type = 11 // CDF-5: 64-bit unsigned integer
)

// types holds each type's CDL name, size and default fill value (the
// NC_FILL_* constants of netcdf.h, big-endian).
var types = [...]struct {
	name string
	size int
	fill uint64
}{
	Byte:   {"byte", 1, 0x81},                 // -127
	Char:   {"char", 1, 0},                    // NUL
	Short:  {"short", 2, 0x8001},              // -32767
	Int:    {"int", 4, 0x80000001},            // -2147483647
	Float:  {"float", 4, 0x7cf00000},          // 9.9692099683868690e+36f
	Double: {"double", 8, 0x479e000000000000}, // 9.9692099683868690e+36
	UByte:  {"ubyte", 1, 0xff},                // 255
	UShort: {"ushort", 2, 0xffff},             // 65535
	UInt:   {"uint", 4, 0xffffffff},           // 4294967295
	Int64:  {"int64", 8, 0x8000000000000002},  // -9223372036854775806
	UInt64: {"uint64", 8, 0xfffffffffffffffe}, // 18446744073709551614
}

// Valid reports whether t is one of the eleven classic types.
func (t Type) Valid() bool { return t >= Byte && t <= UInt64 }

// String is the type's CDL name: "short", "uint64".
func (t Type) String() string {
	if !t.Valid() {
		return fmt.Sprintf("Type(%d)", int32(t))
	}
	return types[t].name
}

// Size returns the bytes of one value; 0 for an invalid type.
func (t Type) Size() int {
	if !t.Valid() {
		return 0
	}
	return types[t].size
}

// In reports whether format f has type t: CDF-1 and CDF-2 have the six
// types from Byte to Double, CDF-5 all eleven.
func (t Type) In(f Format) bool {
	if f == CDF5 {
		return t.Valid()
	}
	return t >= Byte && t <= Double
}

// Fill returns one value of t's default fill value (NC_FILL_SHORT, ...),
// big-endian: what netCDF-C writes where nothing was written and there
// is no _FillValue attribute.
func (t Type) Fill() []byte {
	if !t.Valid() {
		return nil
	}
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, types[t].fill)
	return b[8-t.Size():]
}

// Limits of netCDF-C (netcdf.h). Since 4.5.0 netCDF-C itself no longer
// enforces the counts, but readers built on it keep fixed-size tables
// (ncdump's names are NC_MAX_NAME+1 bytes), so files stay within them.
const (
	MaxName    = 256  // NC_MAX_NAME: bytes of a name
	MaxDims    = 1024 // NC_MAX_DIMS: dimensions in a file
	MaxVars    = 8192 // NC_MAX_VARS: variables in a file
	MaxAttrs   = 8192 // NC_MAX_ATTRS: attributes of one variable, or global ones
	MaxVarDims = 1024 // NC_MAX_VAR_DIMS: dimensions of one variable
)

// maxVSize is the largest variable a CDF-1 or CDF-2 file holds: its vsize
// field is 32 bits, and netCDF-C refuses a fixed-size variable larger than
// 2^32 - 4 bytes (but for the last one, which zfuse does not rely on).
const maxVSize = math.MaxUint32 - 3

// maxLen32 is the longest dimension (and the most values of one
// attribute) a CDF-1 or CDF-2 file can say: a non-negative 32-bit integer.
const maxLen32 = math.MaxInt32
