package codec

import (
	"fmt"
)

// What the numcodecs filters share: the dtypes their configurations name
// and the room checks of their Decode and EncodedLen.

// configDType reads the dtype under key. def is returned when the key is
// absent or null; a nil def makes the key required.
func configDType(c Config, key string, def *DType) (DType, error) {
	if !c.Has(key) {
		if def == nil {
			return DType{}, fmt.Errorf("%w: %q is required", ErrConfig, key)
		}
		return *def, nil
	}
	s, err := c.String(key, "")
	if err != nil {
		return DType{}, err
	}
	return parseFilterDType(s)
}

// configDTypes reads the pair delta, fixedscaleoffset and quantize share:
// "dtype", the decoded elements (required), and "astype", the stored ones
// (dtype when absent).
func configDTypes(c Config) (dt, at DType, err error) {
	if dt, err = configDType(c, "dtype", nil); err != nil {
		return dt, at, err
	}
	at, err = configDType(c, "astype", &dt)
	return dt, at, err
}

// parseFilterDType is ParseDType for the dtypes filters compute with:
// bools, integers, the floats and complex numbers of at most 64 bits a
// part (numpy's float128 is x87 extended precision), and datetimes with a
// unit. Text, raw bytes and objects are not numbers to filter.
func parseFilterDType(s string) (DType, error) {
	d, err := ParseDType(s)
	if err != nil {
		return DType{}, err
	}
	ok := false
	switch d.Kind {
	case 'b', 'i', 'u':
		ok = true
	case 'f':
		ok = d.Size <= 8
	case 'c':
		ok = d.Size <= 16
	case 'M', 'm':
		ok = d.Unit != ""
	}
	if !ok {
		return DType{}, fmt.Errorf("%w: dtype %q: not a dtype filters compute with", ErrConfig, s)
	}
	return d, nil
}

// filterCount checks a filter's input and output room: src must hold whole
// elements of inSize bytes (ErrCorrupt otherwise), and the n decoded
// elements of outSize bytes must fit in cap(dst) after len(dst)
// (ErrTooLarge otherwise). It returns n and the output slice to fill.
func filterCount(dst, src []byte, inSize, outSize int) (int, []byte, error) {
	if len(src)%inSize != 0 {
		return 0, nil, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte elements", ErrCorrupt, len(src), inSize)
	}
	n := len(src) / inSize
	if n > (cap(dst)-len(dst))/outSize {
		return 0, nil, ErrTooLarge
	}
	return n, dst[len(dst) : len(dst)+n*outSize], nil
}

// filterEncodedLen is the stored size of decodedLen bytes of elements of
// outSize bytes stored as elements of inSize bytes.
func filterEncodedLen(decodedLen, outSize, inSize int) (int, error) {
	if decodedLen%outSize != 0 {
		return 0, fmt.Errorf("%w: %d bytes is not a whole number of %d-byte elements", ErrConfig, decodedLen, outSize)
	}
	return decodedLen / outSize * inSize, nil
}
