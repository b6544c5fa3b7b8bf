package zarr

import (
	"encoding/json"
	"strings"
)

// v2DataType describes a v2 typestr as the v3 data types are described,
// so that both formats share one fill-value parser and one set of
// conversions. Structured dtypes are raw bytes of their item size ('V').
func v2DataType(typestr string, itemSize int) (dt dataType, big bool) {
	dt = dataType{name: typestr, text: typestr, kind: 'V', size: itemSize}
	if len(typestr) < 2 || !strings.ContainsRune("<>|=", rune(typestr[0])) {
		return dt, false // structured
	}
	big = typestr[0] == '>'
	switch k := typestr[1]; k {
	case 'b', 'i', 'u', 'f', 'c', 'S', 'U', 'V':
		dt.kind = k
	case 'M', 'm':
		dt.kind = k
		if i := strings.IndexByte(typestr, '['); i > 0 && strings.HasSuffix(typestr, "]") {
			dt.unit = typestr[i+1 : len(typestr)-1]
		}
	}
	return dt, big
}

// v2FillBytes parses a v2 fill_value into one element (nil for null, and for
// values zfuse cannot read, which it then treats as "no fill value":
// every chunk is written, none is assumed).
func v2FillBytes(typestr string, itemSize int, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil // absent: dataType.fill requires it, v2 readers do not
	}
	dt, big := v2DataType(typestr, itemSize)
	b, err := dt.fill(raw, big) // S and V: base64, as zarr-python 2 writes them
	if err != nil {
		return nil
	}
	return b
}
