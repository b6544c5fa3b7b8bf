package tree

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"

	"github.com/zfuse/zfuse/codec"
	"github.com/zfuse/zfuse/netcdf"
	"github.com/zfuse/zfuse/zarr"
)

// What a group's netCDF file holds (Config.AsNc).
//
// The format is CDF-2 (64-bit offset) where every variable's type and
// size fits it, else CDF-5 (netcdf.File.MinFormat). The variables are the
// group's arrays in name order, each typed as its Zarr data type says:
//
//	int8, int16, int32, int64      byte, short, int, int64 (CDF-5)
//	uint8, uint16, uint32, uint64  ubyte, ushort, uint, uint64 (CDF-5)
//	float32, float64               float, double
//	bool                           byte (CDF-2) or ubyte (CDF-5) of 0 and 1, dtype = "bool",
//	                               no _FillValue (masking false values would hide them)
//	S<n> (fixed-width bytes)       char, with a last dimension NAME_strlen of n
//	datetime64, timedelta64        int64 (CDF-5), units "seconds since 1970-01-01" (per
//	                               the numpy unit, days to nanoseconds; calendar
//	                               "proleptic_gregorian"), or "seconds", unless the
//	                               array has its own units; _FillValue NaT, whatever
//	                               its fill value (numpy's missing time)
//
// Unsigned types are CDF-5's own, not CDF-2's signed types with _Unsigned:
// readers that do not decode CF conventions (ncdump, CDO, C and Fortran
// codes, netCDF4-python with masking and scaling off) then read the
// values the array holds. Arrays of other types (float16, complex, U
// text, structured, raw bytes, objects), arrays that are passed through
// (a codec zfuse cannot decode) and arrays with a zero-length dimension
// (which a classic file can only say as its record dimension) are left
// out, with a Warn line and a line in zfuse info, and so is an array that
// would take the file past netCDF-C's limits (netcdf.MaxVars, MaxDims) or
// whose name is not a netCDF name.
//
// Dimensions are named by the array's dimension_names (v3) or xarray's
// _ARRAY_DIMENSIONS attribute, else NAME_dim0, NAME_dim1, ...; a name
// that is not a netCDF name is replaced by NAME_dimK, with a Warn line.
// Arrays share a dimension by name; one name with two lengths is a
// conflict: the later array's dimension is renamed DIM_LEN (DIM_LEN_2,
// ... where that is taken), with a Warn line.
//
// Attributes: the group's are global attributes, each array's its
// variable's, in stored order, as netcdf.FromJSON types them; missing_value,
// valid_min, valid_max and valid_range in the variable's type where they
// fit it. _ARRAY_DIMENSIONS is left out (it names the dimensions), and
// so are netCDF-4's reserved names (_NCProperties, ...) and names that
// are not netCDF names (a Warn line). _FillValue, first, is of the
// variable's type: a v2 array's fill_value (none where it is null, unless
// the attributes hold one); a v3 array's _FillValue attribute where it
// has one (as xarray writes it: a number, or base64 of the value), else
// its fill_value. That is what xarray makes of the Zarr group, so a CF
// reader decodes the file as xarray decodes the group.

// errNoNcType means an array's data type has no netCDF type.
var errNoNcType = errors.New("no netCDF classic type")

// ncReserved are attribute names netCDF-C keeps for itself.
var ncReserved = map[string]bool{
	"_NCProperties": true, "_IsNetcdf4": true, "_SuperblockVersion": true, "_Format": true,
	"_Netcdf4Coordinates": true, "_Netcdf4Dimid": true, "_nc3_strict": true,
}

// ncTyped are the attributes given in the variable's type where they fit.
var ncTyped = map[string]bool{"missing_value": true, "valid_min": true, "valid_max": true, "valid_range": true}

// cfTime maps numpy's datetime units to CF's.
var cfTime = map[string]string{"D": "days", "h": "hours", "m": "minutes", "s": "seconds",
	"ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}

// nat is numpy's NaT, big-endian.
var nat = []byte{0x80, 0, 0, 0, 0, 0, 0, 0}

// ncType returns the netCDF type of elements of dt (bool: Byte, which
// becomes UByte in a CDF-5 file).
func ncType(dt codec.DType) (netcdf.Type, error) {
	t := netcdf.Type(0)
	switch dt.Kind {
	case 'b':
		t = netcdf.Byte
	case 'i':
		t = map[int]netcdf.Type{1: netcdf.Byte, 2: netcdf.Short, 4: netcdf.Int, 8: netcdf.Int64}[dt.Size]
	case 'u':
		t = map[int]netcdf.Type{1: netcdf.UByte, 2: netcdf.UShort, 4: netcdf.UInt, 8: netcdf.UInt64}[dt.Size]
	case 'f':
		t = map[int]netcdf.Type{4: netcdf.Float, 8: netcdf.Double}[dt.Size]
	case 'M', 'm':
		t = netcdf.Int64
	case 'S':
		t = netcdf.Char
	}
	if t == 0 {
		return 0, fmt.Errorf("%w for %s", errNoNcType, dt)
	}
	return t, nil
}

// An ncBuilder assembles one group's netCDF file.
type ncBuilder struct {
	t      *Tree
	dir    string // the group's directory key
	gattrs []byte // the group's attributes, a JSON object; nil: none
	cands  []*ncCand
	arrays map[string]ncArray
}

// An ncCand is an array that may become a variable.
type ncCand struct {
	key   string      // the array's directory key
	name  string      // the variable's name
	x     *array      // as the tree loaded it
	a     *zarr.Array // as served: C order, big-endian
	dt    codec.DType // its element type (stored byte order)
	typ   netcdf.Type // bool: Byte until the format is known
	dims  []string
	lens  []int64
	attrs []netcdf.JSONAttr // stored, in order
}

// buildNc builds the netCDF file of the directory dir (of the store root
// when it is an array): nil when dir is neither a group nor holds an
// array, or is an array below the root.
func (t *Tree) buildNc(ctx context.Context, dir *Node) (*ncFile, error) {
	b := &ncBuilder{t: t, dir: dir.key, arrays: map[string]ncArray{}}
	var members []*Node
	switch {
	case dir.arr != nil && dir.key != ".": // an array is a variable of its group's file
		return nil, nil
	case dir.arr != nil:
		members = []*Node{dir}
	default:
		ns, err := t.list(ctx, dir)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if n.kind == kindDir && n.arr != nil {
				members = append(members, n)
			}
		}
		group, attrs, err := t.groupAttrs(ctx, dir)
		if err != nil {
			return nil, err
		}
		if !group && len(members) == 0 {
			return nil, nil
		}
		b.gattrs = attrs
	}
	for _, n := range members {
		name := n.Name()
		if n.key == "." {
			name = t.rootName
		}
		x := n.arr
		if m := n.m; m != nil && m.provisional { // a variable is made from its array's own documents
			own, err := t.own(ctx, n.key, m)
			if err == nil && own.provisional {
				err = &fs.PathError{Op: "lookup", Path: n.key, Err: errOwnUnread}
			}
			if err != nil {
				return nil, err
			}
			x = own.arr
		}
		if err := b.add(ctx, n.key, name, x); err != nil {
			return nil, err
		}
	}
	return b.finish(ctx)
}

// groupAttrs says whether dir has group metadata and returns its
// attributes (a JSON object; nil when there are none).
func (t *Tree) groupAttrs(ctx context.Context, dir *Node) (group bool, attrs []byte, err error) {
	if dir.m != nil && dir.m.format == 3 {
		doc := dir.m.files[zarr.MetadataFile]
		if doc == nil {
			if doc, err = t.store.ReadKey(ctx, join(dir.key, zarr.MetadataFile)); err != nil {
				return false, nil, err
			}
		}
		if _, g, err := zarr.ParseV3(doc); err == nil && g != nil {
			return true, g.Attributes, nil
		}
		return true, nil, nil
	}
	_, err = t.store.Stat(ctx, join(dir.key, zarr.GroupFile))
	switch {
	case err == nil:
		group = true
	case !errors.Is(err, fs.ErrNotExist):
		return false, nil, err
	}
	attrs, err = t.store.ReadKey(ctx, join(dir.key, zarr.AttrsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return group, nil, nil
	}
	return group, attrs, err
}

// leave records that the array in the directory key, which would be the
// variable name, is left out, and why.
func (b *ncBuilder) leave(ctx context.Context, key, name string, why error) {
	b.arrays[key] = ncArray{name: name, why: why}
	b.t.log.WarnContext(ctx, "array left out of the netCDF file", "key", key, "err", why)
}

// add makes the array x, in the directory key, a candidate variable
// named name, or leaves it out. Only the store failing is an error.
func (b *ncBuilder) add(ctx context.Context, key, name string, x *array) error {
	if x.why != nil {
		b.leave(ctx, key, name, x.why)
		return nil
	}
	vname, err := netcdf.Name(name)
	if err != nil {
		b.leave(ctx, key, name, err)
		return nil
	}
	a := x.a
	c := &ncCand{key: key, name: vname, x: x, dt: a.Type()}
	if a.Structured() {
		b.leave(ctx, key, vname, fmt.Errorf("%w for the structured dtype %s", errNoNcType, a.DType))
		return nil
	}
	if c.typ, err = ncType(c.dt); err != nil {
		b.leave(ctx, key, vname, err)
		return nil
	}
	zattrs := a.Attributes()
	if a.Format == 2 {
		zattrs, err = b.t.store.ReadKey(ctx, join(key, zarr.AttrsFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			zattrs = nil
		case err != nil:
			return err
		}
	}
	if len(zattrs) > 0 {
		if c.attrs, err = netcdf.JSONObject(zattrs); err != nil {
			b.t.log.WarnContext(ctx, "attributes left out of the netCDF file", "key", key, "err", err)
		}
	}
	if c.dt.Kind == 'M' || c.dt.Kind == 'm' {
		if _, own := c.attr("units"); !own && cfTime[c.dt.Unit] == "" {
			b.leave(ctx, key, vname, fmt.Errorf("%w for %s: no CF time unit for %q", errNoNcType, c.dt, c.dt.Unit))
			return nil
		}
	}
	c.dims, c.lens = b.dimNames(ctx, c, a)
	if c.dt.Kind == 'S' {
		c.dims, c.lens = append(c.dims, vname+"_strlen"), append(c.lens, int64(c.dt.Size))
	}
	for i, l := range c.lens {
		if l == 0 {
			b.leave(ctx, key, vname, fmt.Errorf("dimension %s has length 0, which a classic file can only have as its record dimension", c.dims[i]))
			return nil
		}
	}
	if c.a, err = a.Relayout(true); err != nil {
		b.leave(ctx, key, vname, err)
		return nil
	}
	b.cands = append(b.cands, c)
	return nil
}

// attr returns the stored attribute name of c.
func (c *ncCand) attr(name string) ([]byte, bool) {
	for _, m := range c.attrs {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// dimNames names the dimensions of c's array a: dimension_names (v3),
// else _ARRAY_DIMENSIONS, else NAME_dimK; names that are not netCDF
// names are replaced, with a Warn line.
func (b *ncBuilder) dimNames(ctx context.Context, c *ncCand, a *zarr.Array) ([]string, []int64) {
	rank := len(a.Shape)
	given := a.DimensionNames()
	if v, ok := c.attr("_ARRAY_DIMENSIONS"); ok && given == nil {
		var names []string
		if json.Unmarshal(v, &names) == nil && len(names) == rank {
			given = names
		} else {
			b.t.log.WarnContext(ctx, "_ARRAY_DIMENSIONS does not name the array's dimensions: not used", "key", c.key, "value", string(v))
		}
	}
	dims, lens := make([]string, rank), make([]int64, rank)
	for i := range rank {
		lens[i] = int64(a.Shape[i])
		fallback := c.name + "_dim" + strconv.Itoa(i)
		dims[i] = fallback
		if i >= len(given) || given[i] == "" {
			continue
		}
		n, err := netcdf.Name(given[i])
		if err != nil {
			b.t.log.WarnContext(ctx, "dimension renamed in the netCDF file", "key", c.key, "dimension", fallback, "err", err)
			continue
		}
		dims[i] = n
	}
	return dims, lens
}

// ncDims are a file's dimensions as variables take them.
type ncDims struct {
	list   []netcdf.Dim
	byName map[string]int
}

// take returns the dimension ids of c's dimensions, adding those the file
// lacks, renaming any whose name the file has with another length.
func (d *ncDims) take(ctx context.Context, b *ncBuilder, c *ncCand) []int {
	ids := make([]int, len(c.dims))
	for i, name := range c.dims {
		l := c.lens[i]
		if id, ok := d.byName[name]; ok && d.list[id].Len != l {
			renamed := name + "_" + strconv.FormatInt(l, 10)
			for k := 2; ; k++ {
				if id, ok := d.byName[renamed]; !ok || d.list[id].Len == l {
					break
				}
				renamed = name + "_" + strconv.FormatInt(l, 10) + "_" + strconv.Itoa(k)
			}
			b.t.log.WarnContext(ctx, "dimension renamed in the netCDF file: another array has one of that name and another length",
				"key", c.key, "dimension", name, "length", l, "as", renamed)
			name = renamed
		}
		id, ok := d.byName[name]
		if !ok {
			id = len(d.list)
			d.list = append(d.list, netcdf.Dim{Name: name, Len: l})
			d.byName[name] = id
		}
		ids[i] = id
	}
	return ids
}

// finish assembles the file from the candidates: the format, the
// dimensions, each variable and its attributes, the global attributes.
func (b *ncBuilder) finish(ctx context.Context) (*ncFile, error) {
	format := b.format()
	f := &netcdf.File{Format: format}
	dims := &ncDims{byName: map[string]int{}}
	nf := &ncFile{arrays: b.arrays}
	var arrays []*zarr.Array
	for _, c := range b.cands {
		if len(f.Vars) == netcdf.MaxVars {
			b.leave(ctx, c.key, c.name, fmt.Errorf("the file has netCDF-C's limit of %d variables", netcdf.MaxVars))
			continue
		}
		mark := len(dims.list)
		ids := dims.take(ctx, b, c)
		typ := c.typ
		if c.dt.Kind == 'b' && format == netcdf.CDF5 {
			typ = netcdf.UByte
		}
		attrs, fill := b.varAttrs(ctx, c, typ, format)
		v := netcdf.Var{Name: c.name, Dims: ids, Type: typ, Attrs: attrs}
		why := error(nil)
		if len(dims.list) > netcdf.MaxDims {
			why = fmt.Errorf("its dimensions would take the file past netCDF-C's limit of %d", netcdf.MaxDims)
		} else if err := checkVar(format, dims.list, v); err != nil {
			why = err
		}
		if why != nil {
			for _, d := range dims.list[mark:] {
				delete(dims.byName, d.Name)
			}
			dims.list = dims.list[:mark]
			b.leave(ctx, c.key, c.name, why)
			continue
		}
		f.Vars = append(f.Vars, v)
		nf.vars = append(nf.vars, ncVar{path: c.x.path, a: c.a, fill: fill})
		nf.names = append(nf.names, c.name)
		b.arrays[c.key] = ncArray{name: c.name, typ: typ}
		arrays = append(arrays, c.x.a)
	}
	f.Dims = dims.list
	f.Attrs = b.attrs(ctx, b.dir, b.gattrs, format)
	if _, err := (&netcdf.File{Format: format, Attrs: f.Attrs}).Encode(); err != nil {
		b.t.log.WarnContext(ctx, "global attributes left out of the netCDF file", "key", b.dir, "err", err)
		f.Attrs = nil
	}
	l, err := f.Encode()
	if err != nil { // each part encoded by itself: cannot happen
		return nil, fmt.Errorf("netCDF file of %s: %w", b.dir, err)
	}
	nf.layout = l
	nf.version = ncVersion(l.Header, arrays)
	return nf, nil
}

// format returns the file's format: CDF-2 unless a type or size of a
// candidate needs CDF-5.
func (b *ncBuilder) format() netcdf.Format {
	var prov netcdf.File
	for _, c := range b.cands {
		v := netcdf.Var{Name: c.name, Type: c.typ}
		for i, l := range c.lens {
			v.Dims = append(v.Dims, len(prov.Dims))
			prov.Dims = append(prov.Dims, netcdf.Dim{Name: c.dims[i], Len: l})
		}
		prov.Vars = append(prov.Vars, v)
	}
	return prov.MinFormat()
}

// checkVar reports what keeps v, whose dimensions are in dims, from a
// file of format f: it encodes a file of v and its own dimensions alone.
func checkVar(f netcdf.Format, dims []netcdf.Dim, v netcdf.Var) error {
	one := netcdf.File{Format: f, Vars: []netcdf.Var{v}}
	one.Vars[0].Dims = make([]int, len(v.Dims))
	at := map[int]int{}
	for i, d := range v.Dims {
		if _, ok := at[d]; !ok {
			at[d] = len(one.Dims)
			one.Dims = append(one.Dims, dims[d])
		}
		one.Vars[0].Dims[i] = at[d]
	}
	_, err := one.Encode()
	return err
}

// attrs returns the attributes of the JSON object doc (of the group in
// the directory key) as the global attributes of a file of format f
// (convert).
func (b *ncBuilder) attrs(ctx context.Context, key string, doc []byte, f netcdf.Format) []netcdf.Attr {
	if len(doc) == 0 {
		return nil
	}
	ms, err := netcdf.JSONObject(doc)
	if err != nil {
		b.t.log.WarnContext(ctx, "attributes left out of the netCDF file", "key", key, "err", err)
		return nil
	}
	return b.convert(ctx, key, ms, 0, f, nil)
}

// convert turns the stored attributes ms (of the group or array in the
// directory key) into netCDF attributes of a file of format f, after
// those in head, whose names it leaves out of ms, and leaves out the
// names netCDF has no place for. typ, when not 0, is the variable's type,
// which ncTyped attributes take where they fit it.
func (b *ncBuilder) convert(ctx context.Context, key string, ms []netcdf.JSONAttr, typ netcdf.Type, f netcdf.Format, head []netcdf.Attr) []netcdf.Attr {
	out := head
	seen := map[string]bool{}
	for _, a := range head {
		seen[a.Name] = true
	}
	for _, m := range ms {
		if m.Name == "_ARRAY_DIMENSIONS" || m.Name == "_FillValue" || ncReserved[m.Name] {
			continue
		}
		name, err := netcdf.Name(m.Name)
		if err == nil && seen[name] {
			err = fmt.Errorf("%w: %q twice (after NFC normalisation)", netcdf.ErrName, name)
		}
		if err == nil && len(out) == netcdf.MaxAttrs {
			err = fmt.Errorf("netCDF-C's limit of %d attributes", netcdf.MaxAttrs)
		}
		if err != nil {
			b.t.log.WarnContext(ctx, "attribute left out of the netCDF file", "key", key, "attribute", m.Name, "err", err)
			continue
		}
		var a netcdf.Attr
		ok := false
		if typ != 0 && typ != netcdf.Char && ncTyped[name] {
			a, ok = netcdf.AsType(name, m.Value, typ)
		}
		if !ok {
			a, err = netcdf.FromJSON(name, m.Value, f)
			if err != nil { // JSONObject read it: cannot happen
				continue
			}
		}
		seen[name] = true
		out = append(out, a)
	}
	return out
}

// varAttrs returns the attributes of c's variable, of type typ in a file
// of format f, and the value its padding reads as: _FillValue first, the
// stored attributes, then what the type adds (units and calendar of
// times, dtype of bools).
func (b *ncBuilder) varAttrs(ctx context.Context, c *ncCand, typ netcdf.Type, f netcdf.Format) ([]netcdf.Attr, []byte) {
	var head []netcdf.Attr
	fill := b.fillValue(ctx, c, typ)
	pad := fill
	if fill != nil {
		head = append(head, netcdf.Attr{Name: "_FillValue", Type: typ, Values: fill})
	} else {
		pad = typ.Fill()
	}
	ms := c.attrs
	if c.dt.Kind == 'b' { // dtype says bool: theirs gives way
		ms = nil
		for _, m := range c.attrs {
			if m.Name != "dtype" {
				ms = append(ms, m)
			}
		}
	}
	out := b.convert(ctx, c.key, ms, typ, f, head)
	has := func(name string) bool {
		for _, a := range out {
			if a.Name == name {
				return true
			}
		}
		return false
	}
	switch c.dt.Kind {
	case 'M':
		if !has("units") {
			out = append(out, netcdf.Text("units", cfTime[c.dt.Unit]+" since 1970-01-01"))
			if !has("calendar") {
				out = append(out, netcdf.Text("calendar", "proleptic_gregorian"))
			}
		}
	case 'm':
		if !has("units") {
			out = append(out, netcdf.Text("units", cfTime[c.dt.Unit]))
		}
	case 'b':
		out = append(out, netcdf.Text("dtype", "bool"))
	}
	return out, pad
}

// fillValue returns the _FillValue of c's variable, one value of typ,
// big-endian; nil for none (see the file comment).
func (b *ncBuilder) fillValue(ctx context.Context, c *ncCand, typ netcdf.Type) []byte {
	switch c.dt.Kind {
	case 'M', 'm':
		// numpy's missing value, whatever the fill value: CF readers
		// must mask it (xarray cannot decode it as a time), and keep
		// every time zarr-python reads.
		return nat
	case 'b':
		// A bool's fill value is no missing value: masking it would
		// hide every false (or true) value.
		return nil
	}
	raw, hasAttr := c.attr("_FillValue")
	if c.x.a.Format == 3 && hasAttr {
		if v := xarrayFill(raw, c.dt, typ); v != nil {
			return v
		}
		b.t.log.WarnContext(ctx, "_FillValue attribute not of the array's type: fill_value used", "key", c.key, "value", string(raw))
	}
	if fill := c.a.Fill; fill != nil {
		if c.dt.Kind == 'S' { // a char variable's fill is one character
			for _, x := range fill {
				if x != 0 {
					return nil
				}
			}
			return []byte{0}
		}
		return fill
	}
	if hasAttr && typ != netcdf.Char {
		if a, ok := netcdf.AsType("_FillValue", raw, typ); ok && a.Len() == 1 {
			return a.Values
		}
	}
	return nil
}

// xarrayFill reads a _FillValue attribute of a v3 array as xarray writes
// it (a number; for floats base64 of the little-endian double, or "NaN",
// "Infinity", "-Infinity"; a bool for bools) as one value of typ; nil
// when it is none of those.
func xarrayFill(raw []byte, dt codec.DType, typ netcdf.Type) []byte {
	if typ == netcdf.Char {
		return nil
	}
	if a, ok := netcdf.AsType("_FillValue", raw, typ); ok && a.Len() == 1 {
		return a.Values
	}
	var s string
	var flag bool
	switch {
	case json.Unmarshal(raw, &flag) == nil && dt.Kind == 'b':
		if flag {
			return []byte{1}
		}
		return []byte{0}
	case json.Unmarshal(raw, &s) != nil || (typ != netcdf.Float && typ != netcdf.Double):
		return nil
	}
	f := math.NaN()
	switch s {
	case "NaN":
	case "Infinity":
		f = math.Inf(1)
	case "-Infinity":
		f = math.Inf(-1)
	default:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 8 {
			return nil
		}
		f = math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	if typ == netcdf.Float {
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f)))
	}
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(f))
}
