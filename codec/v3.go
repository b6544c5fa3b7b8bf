package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A V3Kind says what a Zarr v3 codec consumes and produces. A v3 codec list
// is zero or more ArrayToArray codecs, exactly one ArrayToBytes codec, then
// zero or more BytesToBytes codecs; decoding runs it backwards.
type V3Kind int

const (
	ArrayToArray V3Kind = iota + 1
	ArrayToBytes
	BytesToBytes
)

func (k V3Kind) String() string {
	switch k {
	case ArrayToArray:
		return "array→array"
	case ArrayToBytes:
		return "array→bytes"
	case BytesToBytes:
		return "bytes→bytes"
	}
	return "unknown"
}

// v3Kinds lists the codecs that are not bytes→bytes. Every other name is
// taken to be bytes→bytes (compressors and checksums are the open-ended set).
var v3Kinds = map[string]V3Kind{
	"transpose":                  ArrayToArray,
	"bitround":                   ArrayToArray, // zarrs
	"numcodecs.delta":            ArrayToArray,
	"numcodecs.fixedscaleoffset": ArrayToArray,
	"numcodecs.astype":           ArrayToArray,
	"numcodecs.quantize":         ArrayToArray,
	"numcodecs.bitround":         ArrayToArray,
	"numcodecs.packbits":         ArrayToArray,
	"numcodecs.categorize":       ArrayToArray,
	"bytes":                      ArrayToBytes,
	"endian":                     ArrayToBytes, // the old name of bytes
	"sharding_indexed":           ArrayToBytes,
	"vlen-utf8":                  ArrayToBytes,
	"vlen-bytes":                 ArrayToBytes,
	"vlen-array":                 ArrayToBytes,
	"numcodecs.vlen-utf8":        ArrayToBytes,
	"numcodecs.vlen-bytes":       ArrayToBytes,
	"numcodecs.vlen-array":       ArrayToBytes,
	"numcodecs.pcodec":           ArrayToBytes,
	"numcodecs.zfpy":             ArrayToBytes,
	"pcodec":                     ArrayToBytes,
	"zfp":                        ArrayToBytes,
}

// KindOfV3 classifies a Zarr v3 codec name.
func KindOfV3(name string) V3Kind {
	if k, ok := v3Kinds[name]; ok {
		return k
	}
	return BytesToBytes
}

// dtypeKeys are the numcodecs configuration keys that hold a numpy dtype.
var dtypeKeys = []string{"dtype", "astype", "encode_dtype", "decode_dtype"}

// V3Config returns the numcodecs configuration (with its "id") of the
// decoder that undoes the Zarr v3 codec name with the given configuration
// (a JSON object, or empty). It maps the core names (blosc, gzip, zstd,
// crc32c) and the "numcodecs.<id>" names; any other name is taken to be a
// numcodecs id (zarrs writes "zlib", "bz2").
//
// endian is the byte order of the array's bytes codec ("little", "big", or
// "" for 1-byte types). In zfuse, array→array codecs work on chunk bytes in
// that stored order, so every dtype in their configuration ("int32", "<i4")
// is given that byte order.
//
// bytes, transpose and sharding_indexed need the chunk shape and are built
// by the caller; asking for them gives ErrConfig. Object codecs give
// ErrNotRaw. The result is checked with NewConfig by the caller.
func V3Config(name string, configuration json.RawMessage, endian string) (Config, error) {
	c := Config{}
	if len(bytes.TrimSpace(configuration)) > 0 && string(bytes.TrimSpace(configuration)) != "null" {
		if err := json.Unmarshal(configuration, &c); err != nil || c == nil {
			return nil, fmt.Errorf("%w: codec %q: configuration is not a JSON object", ErrConfig, name)
		}
	}
	switch name {
	case "bytes", "endian", "transpose", "sharding_indexed":
		return nil, fmt.Errorf("%w: codec %q needs the chunk shape", ErrConfig, name)
	case "vlen-utf8", "vlen-bytes", "vlen-array":
		return nil, fmt.Errorf("%w: object codec %q", ErrNotRaw, name)
	}
	id, numcodecs := strings.CutPrefix(name, "numcodecs.")
	if numcodecs {
		// numcodecs.zarr3 0.14/0.15 wrote the id inside the configuration.
		if c.Has("id") && c.ID() != id {
			return nil, fmt.Errorf("%w: codec %q has id %q", ErrConfig, name, c.ID())
		}
	} else if name == "blosc" {
		if err := blosc3(c); err != nil {
			return nil, err
		}
	}
	c["id"], _ = json.Marshal(id)
	if KindOfV3(name) == ArrayToArray {
		for _, k := range dtypeKeys {
			if !c.Has(k) {
				continue
			}
			s, err := c.String(k, "")
			if err != nil {
				return nil, err
			}
			d, err := parseFilterDType(s)
			if err != nil {
				return nil, err
			}
			d.Big = endian == "big" && d.Ordered()
			c[k], _ = json.Marshal(d.String())
		}
	}
	return c, nil
}

// blosc3 rewrites a v3 blosc configuration as numcodecs': shuffle is a
// string there ("noshuffle", "shuffle", "bitshuffle"; zarrita writes the
// number) and typesize is not a numcodecs key. The Blosc header is
// authoritative for decoding anyway.
func blosc3(c Config) error {
	delete(c, "typesize")
	if !c.Has("shuffle") {
		return nil
	}
	var s string
	if json.Unmarshal(c["shuffle"], &s) != nil {
		return nil // a number, as numcodecs writes it
	}
	n, ok := bloscShuffles[s]
	if !ok {
		return fmt.Errorf("%w: blosc shuffle %q", ErrConfig, s)
	}
	c["shuffle"], _ = json.Marshal(n)
	return nil
}

// Transpose undoes the Zarr v3 transpose codec: the stored array B is
// np.transpose(A, Order), so B.shape[i] = A.shape[Order[i]], both in C
// order, and Decode writes A. Elements are moved as opaque items of
// ItemSize bytes, so it works for any fixed-size type and byte order.
//
// A Transpose is immutable and safe for concurrent use.
type Transpose struct {
	shape    []int // A's shape
	order    []int
	itemSize int
	stride   []int // stride[d]: bytes in src between neighbours along A's axis d
	n        int   // elements
}

var (
	_ Decoder      = (*Transpose)(nil)
	_ EncodedSizer = (*Transpose)(nil)
)

// NewTranspose returns the decoder for chunks of the given (decoded) shape
// stored transposed by order, a permutation of 0..len(shape)-1.
func NewTranspose(shape, order []int, itemSize int) (*Transpose, error) {
	if len(order) != len(shape) || itemSize <= 0 {
		return nil, fmt.Errorf("%w: transpose order %v for shape %v", ErrConfig, order, shape)
	}
	seen := make([]bool, len(order))
	for _, o := range order {
		if o < 0 || o >= len(order) || seen[o] {
			return nil, fmt.Errorf("%w: transpose order %v is not a permutation", ErrConfig, order)
		}
		seen[o] = true
	}
	t := &Transpose{shape: append([]int(nil), shape...), order: append([]int(nil), order...), itemSize: itemSize, n: 1}
	t.stride = make([]int, len(shape))
	s := itemSize
	for i := len(order) - 1; i >= 0; i-- { // B's C-order strides, given to A's axes
		t.stride[order[i]] = s
		s *= shape[order[i]]
	}
	for _, d := range shape {
		t.n *= d
	}
	return t, nil
}

// Identity reports whether the order leaves the bytes as they are.
func (t *Transpose) Identity() bool {
	prev := -1
	for _, o := range t.order {
		if t.shape[o] == 1 {
			continue // axes of length 1 move nothing
		}
		if o < prev {
			return false
		}
		prev = o
	}
	return true
}

// EncodedLen is n: transposing moves bytes, it adds none.
func (t *Transpose) EncodedLen(n int) (int, error) { return n, nil }

// Decode appends A, in C order, to dst.
func (t *Transpose) Decode(dst, src []byte) ([]byte, error) {
	size := t.n * t.itemSize
	if len(src) != size {
		return dst, fmt.Errorf("%w: transpose: %d bytes, want %d", ErrCorrupt, len(src), size)
	}
	if size > cap(dst)-len(dst) {
		return dst, ErrTooLarge
	}
	out := dst[len(dst) : len(dst)+size]
	rank := len(t.shape)
	if rank == 0 || t.n == 0 || t.Identity() {
		copy(out, src)
		return dst[:len(dst)+size], nil
	}
	t.tiled(out, src)
	return dst[:len(dst)+size], nil
}

// tile is the side of the square blocks tiled copies move: 32×32 items
// keep both the rows read and the rows written in cache.
const tile = 32

// tiled writes A (out, C order) from B (src). p is A's last axis
// (contiguous in out), q the axis contiguous in src (B's last). The copy
// runs over tiles of the (q, p) plane, for every position of the other axes,
// so reads and writes both stay within a few cache lines per tile.
func (t *Transpose) tiled(out, src []byte) {
	rank, is := len(t.shape), t.itemSize
	p, q := rank-1, t.order[rank-1]
	dstStride := make([]int, rank)
	st := is
	for d := rank - 1; d >= 0; d-- {
		dstStride[d] = st
		st *= t.shape[d]
	}
	var others []int
	for d := range rank {
		if d != p && d != q {
			others = append(others, d)
		}
	}
	idx := make([]int, len(others))
	sp, np := t.stride[p], t.shape[p]
	sq, nq, dq := t.stride[q], t.shape[q], dstStride[q]
	if p == q {
		nq, sq, dq = 1, 0, 0 // rows are contiguous on both sides
	}
	for {
		bs, bd := 0, 0
		for k, d := range others {
			bs += idx[k] * t.stride[d]
			bd += idx[k] * dstStride[d]
		}
		for q0 := 0; q0 < nq; q0 += tile {
			q1 := min(q0+tile, nq)
			for p0 := 0; p0 < np; p0 += tile {
				p1 := min(p0+tile, np)
				if p == q {
					p1 = np
				}
				for i := q0; i < q1; i++ {
					s, d := bs+i*sq+p0*sp, bd+i*dq+p0*is
					switch {
					case sp == is:
						copy(out[d:d+(p1-p0)*is], src[s:s+(p1-p0)*is])
					case is == 1:
						for range p1 - p0 {
							out[d] = src[s]
							d++
							s += sp
						}
					case is == 2:
						for range p1 - p0 {
							out[d], out[d+1] = src[s], src[s+1]
							d += 2
							s += sp
						}
					case is == 4:
						for range p1 - p0 {
							copy(out[d:d+4], src[s:s+4])
							d += 4
							s += sp
						}
					default:
						for range p1 - p0 {
							copy(out[d:d+is], src[s:s+is])
							d += is
							s += sp
						}
					}
				}
				if p == q {
					break
				}
			}
		}
		k := len(others) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < t.shape[others[k]] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}
