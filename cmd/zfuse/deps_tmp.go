package main
import (
 _ "github.com/hanwen/go-fuse/v2/fs"
 _ "github.com/klauspost/compress/zstd"
 _ "github.com/klauspost/compress/snappy"
 _ "github.com/klauspost/compress/flate"
 _ "github.com/pierrec/lz4/v4"
 _ "github.com/dgraph-io/ristretto/v2"
 _ "github.com/ebitengine/purego"
 _ "github.com/ulikunitz/xz"
 _ "golang.org/x/sync/singleflight"
)
func main(){}
