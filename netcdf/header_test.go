package netcdf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// ints, floats and doubles encode attribute values for the tests.
func ints(t Type, vs ...int64) []byte {
	b := make([]byte, len(vs)*t.Size())
	for i, v := range vs {
		putBits(b[i*t.Size():(i+1)*t.Size()], uint64(v))
	}
	return b
}

func floats(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func doubles(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// headerFiles are the files the header tests write, each with a name.
var headerFiles = []struct {
	name string
	f    File
}{
	{"empty CDF-2", File{Format: CDF2}},
	{"empty CDF-5", File{Format: CDF5}},
	{"tiny CDF-1", File{Format: CDF1, Dims: []Dim{{"dim", 5}}, Vars: []Var{{Name: "vx", Dims: []int{0}, Type: Short}}}},
	{"group CDF-2", File{Format: CDF2,
		Dims: []Dim{{"time", 3}, {"lat", 2}, {"lon", 5}},
		Attrs: []Attr{Text("title", "a test"), {"n", Int, ints(Int, 1, 2, -3)}, {"d", Double, doubles(1.5)},
			Text("empty", ""), Text("Conventions", "CF-1.8")},
		Vars: []Var{
			{Name: "lat", Dims: []int{1}, Type: Float, Attrs: []Attr{Text("units", "degrees_north")}},
			{Name: "t2m", Dims: []int{0, 1, 2}, Type: Short, Attrs: []Attr{
				{"_FillValue", Short, ints(Short, -1)}, {"scale_factor", Double, doubles(0.01)}, {"add_offset", Double, doubles(273.15)},
				Text("units", "K"), Text("coordinates", "lat")}},
			{Name: "flag", Dims: []int{2}, Type: Byte, Attrs: []Attr{{"_FillValue", Byte, ints(Byte, 0)}, Text("dtype", "bool")}},
			{Name: "scalar", Type: Double},
			{Name: "label", Dims: []int{0, 1}, Type: Char},
			{Name: "odd", Dims: []int{2}, Type: Short, Attrs: []Attr{{"f", Float, floats(1.25, float32(math.Inf(-1)))}}},
		}}},
	{"every type CDF-5", File{Format: CDF5,
		Dims:  []Dim{{"x", 3}, {"x_strlen", 7}},
		Attrs: []Attr{{"big", Int64, ints(Int64, 1<<40, -5)}, {"u", UInt64, ints(UInt64, -2)}},
		Vars: func() []Var {
			var vs []Var
			for t := Byte; t <= UInt64; t++ {
				v := Var{Name: "v_" + t.String(), Dims: []int{0}, Type: t}
				if t != Char {
					v.Attrs = []Attr{{"_FillValue", t, t.Fill()}, {"one", t, ints(t, 1)[:t.Size()]}}
					if t == Float {
						v.Attrs[1].Values = floats(1)
					}
					if t == Double {
						v.Attrs[1].Values = doubles(1)
					}
				} else {
					v.Dims = []int{0, 1}
				}
				vs = append(vs, v)
			}
			return vs
		}()}},
	{"names", File{Format: CDF2,
		Dims:  []Dim{{"température", 2}, {"long name", 1}},
		Attrs: []Attr{Text("_NCProperties_like", "x"), Text("a.b-c+d@e", "ok")},
		Vars:  []Var{{Name: "ü_1", Dims: []int{1, 0}, Type: Int, Attrs: []Attr{Text("long_name", "a \"quoted\" \\ text\nwith a newline")}}}}},
}

// TestEncodeNcgen: every header Encode writes is byte for byte the header
// netCDF-C writes for the same file (ncgen compiling its CDL), and the
// same field by field (compareNetCDFC). ncgen 4.9.0 writes int64
// variables as int ones, so those are left out here (netCDF4-python
// writes them: TestEncodeNetCDF4Python).
func TestEncodeNcgen(t *testing.T) {
	ncgen, err := exec.LookPath("ncgen")
	testutil.Need(t, "netCDF-C's ncgen (Debian's netcdf-bin, make deps)", err == nil)
	for _, tc := range headerFiles {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.Vars = slices.DeleteFunc(slices.Clone(f.Vars), func(v Var) bool { return v.Type == Int64 })
			dir := t.TempDir()
			cdlPath, nc := filepath.Join(dir, "f.cdl"), filepath.Join(dir, "f.nc")
			if err := os.WriteFile(cdlPath, []byte(cdl(&f)), 0o644); err != nil {
				t.Fatal(err)
			}
			kind := map[Format]string{CDF1: "classic", CDF2: "64-bit-offset", CDF5: "cdf5"}[f.Format]
			if out, err := exec.Command(ncgen, "-k", kind, "-o", nc, cdlPath).CombinedOutput(); err != nil {
				t.Fatalf("ncgen: %v\n%s\n%s", err, out, cdl(&f))
			}
			compareNetCDFC(t, &f, testutil.Must(os.ReadFile(nc)))
		})
	}
}

// TestEncodeNetCDF4Python: the same against netCDF4-python (netCDF-C
// 4.9.0 underneath) writing each file through its API
// (testdata/write.py).
func TestEncodeNetCDF4Python(t *testing.T) {
	testutil.NeedPython(t, "netCDF4")
	for _, tc := range headerFiles {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			specPath, nc := filepath.Join(dir, "f.json"), filepath.Join(dir, "f.nc")
			if err := os.WriteFile(specPath, pySpec(&tc.f), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(testutil.Python, filepath.Join("testdata", "write.py"), specPath, nc).CombinedOutput(); err != nil {
				t.Fatalf("write.py: %v\n%s", err, out)
			}
			compareNetCDFC(t, &tc.f, testutil.Must(os.ReadFile(nc)))
		})
	}
}

// compareNetCDFC checks the layout Encode gives f against want, the file
// netCDF-C wrote for it: the header field by field and byte for byte, the
// variables' begins and sizes, the file's size, and netCDF-C's data part,
// which holds no values written, so that every variable is its fill
// value, padding included, as a reader of our layout serves what is not
// stored.
func compareNetCDFC(t *testing.T, f *File, want []byte) {
	t.Helper()
	l, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	wf, wext, wlen, err := parseHeader(want)
	if err != nil {
		t.Fatalf("parsing netCDF-C's file: %v", err)
	}
	gf, gext, glen, err := parseHeader(l.Header)
	if err != nil {
		t.Fatalf("parsing our header: %v", err)
	}
	compareFiles(t, gf, wf)
	if !reflect.DeepEqual(gext, wext) || glen != wlen {
		t.Errorf("begins and vsizes %v (header %d bytes), netCDF-C's %v (%d)", gext, glen, wext, wlen)
	}
	if !bytes.Equal(l.Header, want[:min(len(want), len(l.Header))]) {
		t.Errorf("header differs from netCDF-C's:\n ours %x\n   nc %x", l.Header, want[:min(len(want), len(l.Header))])
	}
	if l.Size != int64(len(want)) && len(l.Vars) > 0 { // netCDF-C pads a file without variables to 4 KiB
		t.Errorf("file size %d, netCDF-C's %d", l.Size, len(want))
	}
	for i, e := range l.Vars {
		v := &f.Vars[i]
		fill := v.Type.Fill()
		for _, a := range v.Attrs {
			if a.Name == "_FillValue" {
				fill = a.Values
			}
		}
		got := bytes.Repeat(fill, int(e.VSize)/len(fill)+1)[:e.VSize]
		if w := want[min(e.Begin, int64(len(want))):min(e.Begin+e.VSize, int64(len(want)))]; !bytes.Equal(got, w) {
			t.Errorf("variable %s: netCDF-C wrote %x, not its fill value %x", v.Name, w, fill)
		}
		if e.Len != f.dataLen(v) || e.VSize%4 != 0 || e.VSize < e.Len || e.VSize > e.Len+3 {
			t.Errorf("variable %s: extent %+v", v.Name, e)
		}
	}
}

// pySpec describes f for testdata/write.py.
func pySpec(f *File) []byte {
	dtype := map[Type]string{Byte: "i1", Char: "S1", Short: "i2", Int: "i4", Float: "f4", Double: "f8",
		UByte: "u1", UShort: "u2", UInt: "u4", Int64: "i8", UInt64: "u8"}
	attr := func(a Attr) []any {
		if a.Type == Char {
			return []any{a.Name, "text", strings.TrimSuffix(string(a.Values), "\x00")}
		}
		var vs []any
		s := a.Type.Size()
		for i := 0; i+s <= len(a.Values); i += s {
			b := a.Values[i : i+s]
			var u uint64
			for _, c := range b {
				u = u<<8 | uint64(c)
			}
			switch a.Type {
			case Float, Double:
				vs = append(vs, fmt.Sprintf("%x", b))
			case UByte, UShort, UInt, UInt64:
				vs = append(vs, u)
			default:
				vs = append(vs, int64(u<<(64-8*s))>>(64-8*s))
			}
		}
		return []any{a.Name, dtype[a.Type], vs}
	}
	spec := map[string]any{"format": map[Format]string{CDF1: "NETCDF3_CLASSIC", CDF2: "NETCDF3_64BIT_OFFSET", CDF5: "NETCDF3_64BIT_DATA"}[f.Format]}
	dims, attrs, vars := []any{}, []any{}, []any{}
	for _, d := range f.Dims {
		dims = append(dims, []any{d.Name, d.Len})
	}
	for _, a := range f.Attrs {
		attrs = append(attrs, attr(a))
	}
	for _, v := range f.Vars {
		names, as := []string{}, []any{}
		for _, d := range v.Dims {
			names = append(names, f.Dims[d].Name)
		}
		for _, a := range v.Attrs {
			as = append(as, attr(a))
		}
		vars = append(vars, map[string]any{"name": v.Name, "dtype": dtype[v.Type], "dims": names, "attrs": as})
	}
	spec["dims"], spec["attrs"], spec["vars"] = dims, attrs, vars
	return testutil.Must(json.Marshal(spec))
}

// compareFiles reports each field where got and want differ.
func compareFiles(t *testing.T, got, want *File) {
	t.Helper()
	norm := func(f *File) *File {
		c := *f
		c.Vars = nil
		if len(c.Attrs) == 0 {
			c.Attrs = nil
		}
		if len(c.Dims) == 0 {
			c.Dims = nil
		}
		for _, v := range f.Vars {
			if len(v.Attrs) == 0 {
				v.Attrs = nil
			}
			if len(v.Dims) == 0 {
				v.Dims = nil
			}
			c.Vars = append(c.Vars, v)
		}
		return &c
	}
	got, want = norm(got), norm(want)
	if got.Format != want.Format {
		t.Errorf("format %v, want %v", got.Format, want.Format)
	}
	if !reflect.DeepEqual(got.Dims, want.Dims) {
		t.Errorf("dimensions %v, want %v", got.Dims, want.Dims)
	}
	if !reflect.DeepEqual(got.Attrs, want.Attrs) {
		t.Errorf("global attributes\n %v\nwant %v", got.Attrs, want.Attrs)
	}
	if len(got.Vars) != len(want.Vars) {
		t.Fatalf("%d variables, want %d", len(got.Vars), len(want.Vars))
	}
	for i := range got.Vars {
		if g, w := got.Vars[i], want.Vars[i]; !reflect.DeepEqual(g, w) {
			t.Errorf("variable %d\n %+v\nwant %+v", i, g, w)
		}
	}
}

// cdl writes f in netCDF's CDL, for ncgen. A text of one NUL is "", which
// ncgen writes as one NUL.
func cdl(f *File) string {
	var b strings.Builder
	b.WriteString("netcdf f {\n")
	if len(f.Dims) > 0 {
		b.WriteString("dimensions:\n")
		for _, d := range f.Dims {
			fmt.Fprintf(&b, "\t%s = %d ;\n", cdlName(d.Name), d.Len)
		}
	}
	if len(f.Vars) > 0 {
		b.WriteString("variables:\n")
		for _, v := range f.Vars {
			var dims []string
			for _, d := range v.Dims {
				dims = append(dims, cdlName(f.Dims[d].Name))
			}
			fmt.Fprintf(&b, "\t%s %s", v.Type, cdlName(v.Name))
			if len(dims) > 0 {
				fmt.Fprintf(&b, "(%s)", strings.Join(dims, ", "))
			}
			b.WriteString(" ;\n")
			for _, a := range v.Attrs {
				fmt.Fprintf(&b, "\t\t%s:%s = %s ;\n", cdlName(v.Name), cdlName(a.Name), cdlValues(a))
			}
		}
	}
	if len(f.Attrs) > 0 {
		b.WriteString("\n// global attributes:\n")
		for _, a := range f.Attrs {
			fmt.Fprintf(&b, "\t\t:%s = %s ;\n", cdlName(a.Name), cdlValues(a))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// cdlName escapes the characters CDL gives a meaning to.
func cdlName(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r < 0x80 && !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') && !(i > 0 && strings.ContainsRune(".@+-", r)) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cdlValues writes an attribute's values as CDL constants of its type.
func cdlValues(a Attr) string {
	if a.Type == Char {
		return strconv.Quote(strings.TrimSuffix(string(a.Values), "\x00"))
	}
	suffix := map[Type]string{Byte: "b", Short: "s", Int: "", Float: "f", Double: "d", UByte: "ub", UShort: "us", UInt: "u", Int64: "ll", UInt64: "ull"}[a.Type]
	var vs []string
	s := a.Type.Size()
	for i := 0; i+s <= len(a.Values); i += s {
		b := a.Values[i : i+s]
		var u uint64
		for _, c := range b {
			u = u<<8 | uint64(c)
		}
		var v string
		switch a.Type {
		case Float:
			v = cdlFloat(float64(math.Float32frombits(uint32(u))), 32)
		case Double:
			v = cdlFloat(math.Float64frombits(u), 64)
		case UByte, UShort, UInt, UInt64:
			v = strconv.FormatUint(u, 10)
		default:
			v = strconv.FormatInt(int64(u<<(64-8*s))>>(64-8*s), 10)
		}
		vs = append(vs, v+suffix)
	}
	return strings.Join(vs, ", ")
}

func cdlFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'e', -1, bits)
	return s
}

// TestEncodeErrors: what Encode refuses, each for the reason the error
// names.
func TestEncodeErrors(t *testing.T) {
	one := []Dim{{"x", 2}}
	for _, tc := range []struct {
		name string
		f    File
		want error
	}{
		{"no format", File{}, ErrInvalid},
		{"CDF-5 type in CDF-2", File{Format: CDF2, Dims: one, Vars: []Var{{Name: "v", Dims: []int{0}, Type: UByte}}}, ErrInvalid},
		{"CDF-5 attribute in CDF-2", File{Format: CDF2, Attrs: []Attr{{"a", Int64, ints(Int64, 1)}}}, ErrInvalid},
		{"record dimension", File{Format: CDF2, Dims: []Dim{{"x", 0}}}, ErrInvalid},
		{"long dimension", File{Format: CDF2, Dims: []Dim{{"x", 1 << 31}}}, ErrInvalid},
		{"4 GiB variable", File{Format: CDF2, Dims: []Dim{{"x", 1 << 30}}, Vars: []Var{{Name: "v", Dims: []int{0}, Type: Int}}}, ErrInvalid},
		{"two dimensions of one name", File{Format: CDF2, Dims: []Dim{{"x", 1}, {"x", 2}}}, ErrInvalid},
		{"two variables of one name", File{Format: CDF2, Vars: []Var{{Name: "v", Type: Int}, {Name: "v", Type: Int}}}, ErrInvalid},
		{"two attributes of one name", File{Format: CDF2, Vars: []Var{{Name: "v", Type: Int, Attrs: []Attr{Text("a", ""), Text("a", "b")}}}}, ErrInvalid},
		{"a dimension it lacks", File{Format: CDF2, Dims: one, Vars: []Var{{Name: "v", Dims: []int{1}, Type: Int}}}, ErrInvalid},
		{"short attribute values", File{Format: CDF2, Attrs: []Attr{{"a", Int, []byte{1, 2}}}}, ErrInvalid},
		{"bad name", File{Format: CDF2, Vars: []Var{{Name: "a/b", Type: Int}}}, ErrName},
		{"name not NFC", File{Format: CDF2, Vars: []Var{{Name: "e\u0301", Type: Int}}}, ErrName},
		{"too many dimensions of a variable", File{Format: CDF5, Dims: one, Vars: []Var{{Name: "v", Dims: make([]int, MaxVarDims+1), Type: Byte}}}, ErrInvalid},
		{"too many variables", File{Format: CDF2, Vars: func() []Var {
			vs := make([]Var, MaxVars+1)
			for i := range vs {
				vs[i] = Var{Name: "v" + strconv.Itoa(i), Type: Byte}
			}
			return vs
		}()}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.f.Encode(); !errors.Is(err, tc.want) {
				t.Errorf("Encode: %v, want %v", err, tc.want)
			}
		})
	}
	// The limits themselves are fine.
	f := File{Format: CDF5, Dims: []Dim{{"x", 1 << 40}, {"y", 1}}, Vars: []Var{{Name: "v", Dims: make([]int, MaxVarDims), Type: Byte}}}
	for i := 1; i < MaxVarDims; i++ {
		f.Vars[0].Dims[i] = 1
	}
	if l, err := f.Encode(); err != nil || l.Vars[0].Len != 1<<40 {
		t.Errorf("CDF-5 with a 1 TiB variable of %d dimensions: %v", MaxVarDims, err)
	}
}

func TestMinFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    File
		want Format
	}{
		{"empty", File{}, CDF2},
		{"every CDF-2 type", File{Dims: []Dim{{"x", 10}}, Vars: []Var{{Name: "a", Type: Byte}, {Name: "b", Type: Char}, {Name: "c", Type: Short},
			{Name: "d", Type: Int}, {Name: "e", Type: Float}, {Name: "f", Dims: []int{0}, Type: Double}}}, CDF2},
		{"ubyte", File{Vars: []Var{{Name: "a", Type: UByte}}}, CDF5},
		{"int64", File{Vars: []Var{{Name: "a", Type: Int64}}}, CDF5},
		{"2^32-4 bytes", File{Dims: []Dim{{"x", (1<<32 - 4) / 4}}, Vars: []Var{{Name: "a", Dims: []int{0}, Type: Float}}}, CDF2},
		{"2^32 bytes", File{Dims: []Dim{{"x", 1 << 30}}, Vars: []Var{{Name: "a", Dims: []int{0}, Type: Float}}}, CDF5},
		{"2^31 long dimension", File{Dims: []Dim{{"x", 1 << 31}}}, CDF5},
	} {
		if got := tc.f.MinFormat(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestName(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "": invalid
	}{
		{"t2m", "t2m"}, {"_FillValue", "_FillValue"}, {"0x", "0x"}, {"long name", "long name"},
		{"a.b+c-d@e!#$%&'()*,:;<=>?[\\]^`{|}~\"", "a.b+c-d@e!#$%&'()*,:;<=>?[\\]^`{|}~\""},
		{"température", "température"}, {"e\u0301te", "éte"}, {"ünïcode", "ünïcode"}, {"日本", "日本"},
		{"", ""}, {".zattrs", ""}, {"-x", ""}, {" x", ""}, {"x ", ""}, {"a/b", ""}, {"a\tb", ""}, {"a\x7fb", ""},
		{"a\x00", ""}, {"\xff", ""}, {strings.Repeat("n", MaxName), strings.Repeat("n", MaxName)}, {strings.Repeat("n", MaxName+1), ""},
	} {
		got, err := Name(tc.in)
		switch {
		case tc.want == "" && !errors.Is(err, ErrName):
			t.Errorf("Name(%q) = %q, %v; want ErrName", tc.in, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("Name(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzEncode: every file Encode accepts parses back into the same
// dimensions, attributes and variables, with extents that tile the data
// part from the end of the header.
func FuzzEncode(f *testing.F) {
	f.Add(byte(2), []byte("x\x03y\x02"), []byte("v\x01\x00\x01"), []byte("title"), []byte("hello"))
	f.Add(byte(5), []byte("x\x10"), []byte("w\x0a\x00"), []byte("n"), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(byte(1), []byte{}, []byte("s\x06"), []byte("u"), []byte{})
	f.Fuzz(func(t *testing.T, format byte, dims, vars, attrName, attrValues []byte) {
		file := File{Format: Format(format)}
		for i := 0; i+1 < len(dims) && len(file.Dims) < 8; i += 2 {
			file.Dims = append(file.Dims, Dim{Name: string(dims[i : i+1]), Len: int64(dims[i+1])})
		}
		// vars: name byte, type byte, then dimension ids up to the next
		// 0xff.
		for i := 0; i+1 < len(vars) && len(file.Vars) < 8; {
			v := Var{Name: string(vars[i : i+1]), Type: Type(vars[i+1])}
			i += 2
			for i < len(vars) && vars[i] != 0xff && len(v.Dims) < 4 {
				v.Dims = append(v.Dims, int(vars[i]))
				i++
			}
			i++
			v.Attrs = []Attr{{Name: string(attrName), Type: v.Type, Values: attrValues}}
			file.Vars = append(file.Vars, v)
		}
		l, err := file.Encode()
		if err != nil {
			return
		}
		got, ext, hlen, err := parseHeader(l.Header)
		if err != nil || hlen != len(l.Header) {
			t.Fatalf("parsing the header Encode wrote: %v (%d of %d bytes)", err, hlen, len(l.Header))
		}
		compareFiles(t, got, &file)
		at := int64(len(l.Header))
		for i, e := range l.Vars {
			if e.Begin != at || ext[i].Begin != at || ext[i].VSize != e.VSize || e.VSize != round4(e.Len) {
				t.Fatalf("variable %d: extent %+v, header says %+v, want begin %d", i, e, ext[i], at)
			}
			at += e.VSize
		}
		if l.Size != at {
			t.Fatalf("size %d, want %d", l.Size, at)
		}
	})
}
