package netcdf_test

import (
	"fmt"

	"github.com/zfuse/zfuse/netcdf"
)

// A file of one variable, t(time, lat), with a global title: the header,
// where the variable's values lie, and which source serves a byte range
// that straddles the header's end.
func Example() {
	f := netcdf.File{
		Dims:  []netcdf.Dim{{Name: "time", Len: 4}, {Name: "lat", Len: 3}},
		Attrs: []netcdf.Attr{netcdf.Text("title", "example")},
		Vars: []netcdf.Var{{Name: "t", Dims: []int{0, 1}, Type: netcdf.Short,
			Attrs: []netcdf.Attr{netcdf.Text("units", "K")}}},
	}
	f.Format = f.MinFormat()
	l, err := f.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Format, len(l.Header), l.Vars[0], l.Size)
	for _, s := range l.Segments(nil, 150, 20) {
		fmt.Printf("%+v\n", s)
	}
	// Output:
	// CDF-2 152 {152 24 24} 176
	// {Var:-1 Pad:false Off:150 At:0 N:2}
	// {Var:0 Pad:false Off:0 At:2 N:18}
}
