// Write Zarr v3 test arrays with zarrita (an independent implementation):
// the codecs zarrita can encode (bytes in either byte order, transpose,
// zstd, blosc, numcodecs.lz4), partial edge chunks, missing chunks, a
// nested group. Prints the array paths, one per line.
//
// zarrita's blosc encoder reads "shuffle" only as a number (0, 1, 2) and
// silently ignores the spec's strings, so these arrays say a number; the
// caller rewrites it to "noshuffle", "shuffle" or "bitshuffle" in zarr.json
// afterwards, as the v3 spec wants (the decoder reads the Blosc header).
//
// usage: node write.mjs ROOT
// Run it from a directory whose node_modules holds zarrita@0.7.5.
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [rootDir] = process.argv.slice(2);
const store = new FileSystemStore(rootDir);
const root = zarr.root(store);
await zarr.create(root, { attributes: { written_by: "zarrita" } });
await zarr.create(root.resolve("group"), { attributes: { nested: true } });

const bytes = (endian) => ({ name: "bytes", configuration: { endian } });
const zstd = (level, checksum) => ({ name: "zstd", configuration: { level, checksum } });
const blosc = (cname, shuffle, typesize) => ({
  name: "blosc", configuration: { cname, clevel: 5, shuffle, typesize, blocksize: 0 },
});
const lz4 = { name: "numcodecs.lz4", configuration: { acceleration: 1 } };
const transpose = (order) => ({ name: "transpose", configuration: { order } });

const typed = {
  int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  float32: Float32Array, float64: Float64Array,
};

// value i of an array: varied, not compressible to nothing, exact in every type.
function value(dtype, i) {
  if (dtype.startsWith("float")) return Math.round(Math.sin(i * 0.37) * 1000) / 8;
  const v = (i * 7919) % 251;
  return dtype.endsWith("64") ? BigInt(dtype.startsWith("int") ? v - 125 : v) : dtype.startsWith("int") ? v - 125 : v;
}

const arrays = [
  // path, dtype, shape, chunk shape, codecs, fill, region to write (null: all)
  ["bytes.i4", "int32", [7, 5], [3, 2], [bytes("little")], 0, null],
  ["bytes.big.f8", "float64", [10], [4], [bytes("big")], 0, null],
  ["zstd.f8", "float64", [10], [4], [bytes("little"), zstd(3, false)], 0, null],
  // checksum: true is accepted, though numcodecs.js writes frames without one.
  ["zstd.l1.i2", "int16", [6, 6], [4, 4], [bytes("little"), zstd(1, true)], 0, null],
  ["zstd.big.f4", "float32", [9, 4], [4, 4], [bytes("big"), zstd(5, false)], 0, null],
  ["transpose.zstd.u2", "uint16", [4, 5, 6], [3, 2, 4], [transpose([2, 0, 1]), bytes("little"), zstd(1, false)], 0, null],
  ["transpose.f.i4", "int32", [5, 6], [4, 4], [transpose([1, 0]), bytes("little")], 0, null],
  ["blosc.lz4.shuffle.f4", "float32", [33, 17], [8, 8], [bytes("little"), blosc("lz4", 1, 4)], 0, null],
  ["blosc.zstd.bitshuffle.i8", "int64", [100], [30], [bytes("little"), blosc("zstd", 2, 8)], 0, null],
  ["blosc.blosclz.noshuffle.u1", "uint8", [50], [16], [bytes("little"), blosc("blosclz", 0, 1)], 0, null],
  ["blosc.lz4hc.shuffle.big.i2", "int16", [300], [128], [bytes("big"), blosc("lz4hc", 1, 2)], 0, null],
  ["blosc.big.lz4.f8", "float64", [128, 96], [64, 64], [bytes("little"), blosc("lz4", 1, 8)], 0, null],
  ["lz4.i2", "int16", [20, 3], [7, 3], [bytes("little"), lz4], 0, null],
  ["partial.zstd.i4", "int32", [8, 8], [4, 4], [bytes("little"), zstd(1, false)], 3, [zarr.slice(0, 4), null]],
  ["group/inner.lz4.u4", "uint32", [11], [4], [bytes("little"), lz4], 0, null],
];

for (const [path, dtype, shape, chunkShape, codecs, fillValue, region] of arrays) {
  const arr = await zarr.create(root.resolve(path), {
    shape, chunkShape, dtype, codecs, fillValue,
    dimensionNames: shape.map((_, i) => "d" + i),
    attributes: { codecs: codecs.map((c) => c.name).join(",") },
  });
  let sel = shape.map((n) => [0, n]);
  if (region) sel = region.map((r, d) => (r === null ? [0, shape[d]] : [r.start, r.stop]));
  const sub = sel.map(([a, b]) => b - a);
  const n = sub.reduce((a, b) => a * b, 1);
  const data = new typed[dtype](n);
  for (let i = 0; i < n; i++) data[i] = value(dtype, i);
  const stride = sub.map((_, d) => sub.slice(d + 1).reduce((a, b) => a * b, 1));
  await zarr.set(arr, region ?? null, { data, shape: sub, stride });
  console.log(path);
}
