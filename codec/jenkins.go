package codec

import (
	"encoding/binary"
	"math/bits"
)

// jenkinsLookup3 is Bob Jenkins' lookup3 hashlittle (HDF5's
// H5_checksum_lookup3, numcodecs' jenkins_lookup3): words assembled
// little-endian from bytes, 12 bytes per round.
func jenkinsLookup3(k []byte, initval uint32) uint32 {
	a := 0xdeadbeef + uint32(len(k)) + initval
	b, c := a, a
	if len(k) == 0 {
		return c
	}
	for len(k) > 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = jenkinsMix(a, b, c)
		k = k[12:]
	}
	// The last 1..12 bytes, zero-padded: the same as the switch in lookup3.c.
	var last [12]byte
	copy(last[:], k)
	a += binary.LittleEndian.Uint32(last[:])
	b += binary.LittleEndian.Uint32(last[4:])
	c += binary.LittleEndian.Uint32(last[8:])
	return jenkinsFinal(a, b, c)
}

// jenkinsMix and jenkinsFinal are lookup3.c's mix() and final(): the same
// shape with other rotations, written out as the reference writes them.
func jenkinsMix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func jenkinsFinal(a, b, c uint32) uint32 {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}
