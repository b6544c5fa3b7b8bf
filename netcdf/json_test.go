package netcdf

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestFromJSON(t *testing.T) {
	nan := doubles(math.NaN())
	for _, tc := range []struct {
		json   string
		format Format
		want   Attr
	}{
		{`"degC"`, CDF2, Text("a", "degC")},
		{`""`, CDF2, Attr{"a", Char, []byte{0}}},
		{`"\u00e9\n\"x\""`, CDF2, Text("a", "é\n\"x\"")},
		{`1`, CDF2, Attr{"a", Int, ints(Int, 1)}},
		{`[1, -2, 2147483647]`, CDF2, Attr{"a", Int, ints(Int, 1, -2, 2147483647)}},
		{`2147483648`, CDF2, Attr{"a", Double, doubles(2147483648)}},
		{`2147483648`, CDF5, Attr{"a", Int64, ints(Int64, 2147483648)}},
		{`[-1, 9223372036854775807]`, CDF5, Attr{"a", Int64, ints(Int64, -1, math.MaxInt64)}},
		{`18446744073709551615`, CDF5, Attr{"a", UInt64, ints(UInt64, -1)}},
		{`18446744073709551615`, CDF2, Text("a", `18446744073709551615`)},
		{`[1, 9007199254740993]`, CDF2, Text("a", `[1,9007199254740993]`)},
		{`1.5`, CDF2, Attr{"a", Double, doubles(1.5)}},
		{`1.0`, CDF2, Attr{"a", Double, doubles(1)}},
		{`[1, 2.5, 1e3]`, CDF2, Attr{"a", Double, doubles(1, 2.5, 1000)}},
		{`NaN`, CDF2, Attr{"a", Double, nan}},
		{`[Infinity, -Infinity]`, CDF2, Attr{"a", Double, doubles(math.Inf(1), math.Inf(-1))}},
		{`true`, CDF2, Attr{"a", Byte, []byte{1}}},
		{`[true, false]`, CDF2, Attr{"a", Byte, []byte{1, 0}}},
		{`null`, CDF2, Text("a", "null")},
		{`[]`, CDF2, Text("a", "[]")},
		{`["a", "b"]`, CDF2, Text("a", `["a","b"]`)},
		{`[1, "b"]`, CDF2, Text("a", `[1,"b"]`)},
		{` {"k": [1, {"z": NaN}], "j": "\u2603"} `, CDF2, Text("a", `{"k":[1,{"z":NaN}],"j":"☃"}`)},
	} {
		got, err := FromJSON("a", []byte(tc.json), tc.format)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("FromJSON(%s, %v) = %v, %v; want %v", tc.json, tc.format, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `[1,`, `{"a" 1}`, `tru`, `1 2`, `"\x01"`, `01`, `[1]]`} {
		if a, err := FromJSON("a", []byte(bad), CDF2); !errors.Is(err, ErrJSON) {
			t.Errorf("FromJSON(%q) = %v, %v; want ErrJSON", bad, a, err)
		}
	}
}

func TestAsType(t *testing.T) {
	for _, tc := range []struct {
		json string
		typ  Type
		want []byte // nil: does not fit
	}{
		{`-1`, Short, ints(Short, -1)},
		{`[0, 255]`, UByte, []byte{0, 255}},
		{`256`, UByte, nil},
		{`-1`, UInt, nil},
		{`-129`, Byte, nil},
		{`3.0`, Int, ints(Int, 3)},
		{`3.5`, Int, nil},
		{`0.1`, Float, nil}, // rounds
		{`0.5`, Float, floats(0.5)},
		{`NaN`, Float, floats(float32(math.NaN()))},
		{`0.1`, Double, doubles(0.1)},
		{`"x"`, Double, nil},
		{`[]`, Int, nil},
		{`1`, Char, nil},
		{`18446744073709551614`, UInt64, ints(UInt64, -2)},
	} {
		got, ok := AsType("a", []byte(tc.json), tc.typ)
		switch {
		case tc.want == nil && ok:
			t.Errorf("AsType(%s, %v) = %v; want no fit", tc.json, tc.typ, got)
		case tc.want != nil && (!ok || got.Type != tc.typ || !reflect.DeepEqual(got.Values, tc.want)):
			t.Errorf("AsType(%s, %v) = %v, %v; want %x", tc.json, tc.typ, got, ok, tc.want)
		}
	}
}

func TestJSONObject(t *testing.T) {
	got, err := JSONObject([]byte(`{"z": 1, "a": [NaN], "z": "again", "m": {"x": null}}`))
	want := []JSONAttr{{"z", []byte(`"again"`)}, {"a", []byte(`[NaN]`)}, {"m", []byte(`{"x": null}`)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("JSONObject = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{`, `{"a":1,}`} {
		if _, err := JSONObject([]byte(bad)); !errors.Is(err, ErrJSON) {
			t.Errorf("JSONObject(%s): %v, want ErrJSON", bad, err)
		}
	}
}

// FuzzJSON: any JSON object's members become attributes that a file of
// either format holds (or the document is refused with ErrJSON), and
// AsType never gives values of the wrong size.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"units": "K", "scale_factor": 0.01, "valid_range": [0, 100], "flag": true}`,
		`{"a": NaN, "b": [1, 2147483648], "c": {"d": [null]}, "e": "\u00e9"}`, `{}`, `{"": 1, "a/b": 2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ms, err := JSONObject(doc)
		if err != nil {
			if !errors.Is(err, ErrJSON) {
				t.Fatalf("JSONObject: %v, want ErrJSON", err)
			}
			return
		}
		for _, format := range []Format{CDF2, CDF5} {
			file := File{Format: format}
			for i, m := range ms {
				a, err := FromJSON("a"+string(rune('0'+i%10))+string(rune('a'+i/10%26)), m.Value, format)
				if err != nil {
					t.Fatalf("FromJSON(%s) of a member JSONObject read: %v", m.Value, err)
				}
				if i < 260 {
					file.Attrs = append(file.Attrs, a)
				}
				for typ := Byte; typ <= UInt64; typ++ {
					if b, ok := AsType("x", m.Value, typ); ok && (b.Type != typ || len(b.Values)%typ.Size() != 0 || len(b.Values) == 0) {
						t.Fatalf("AsType(%s, %v) = %v", m.Value, typ, b)
					}
				}
			}
			if _, err := file.Encode(); err != nil {
				t.Fatalf("a file of the attributes FromJSON made: %v", err)
			}
		}
	})
}
