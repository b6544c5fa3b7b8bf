// Read Zarr v3 arrays with zarrita (an independent implementation) and
// print one JSON line per array: {"path", "shape", "data"} with the values
// in C order (bigints as numbers, booleans as 0/1), or {"path", "error"}.
//
// usage: node read.mjs ROOT PATH...
// Run it from a directory whose node_modules holds zarrita@0.7.5.
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
for (const path of paths) {
  try {
    const arr = await zarr.open.v3(zarr.root(store).resolve(path), { kind: "array" });
    let c = await zarr.get(arr);
    if (c === null || typeof c !== "object" || !("shape" in c)) {
      c = { shape: [], stride: [], data: [c] }; // a 0-d array reads as its value
    }
    // zarrita may return a strided (F-order) view: walk it in C order.
    const n = c.shape.reduce((a, b) => a * b, 1);
    const out = [];
    const idx = new Array(c.shape.length).fill(0);
    for (let i = 0; i < n; i++) {
      let off = 0;
      for (let d = 0; d < idx.length; d++) off += idx[d] * c.stride[d];
      // BoolArray and the string arrays are read with get(), not [i].
      const v = typeof c.data.get === "function" ? c.data.get(off) : c.data[off];
      out.push(typeof v === "bigint" ? Number(v) : typeof v === "boolean" ? (v ? 1 : 0) : v);
      for (let d = idx.length - 1; d >= 0; d--) {
        if (++idx[d] < c.shape[d]) break;
        idx[d] = 0;
      }
    }
    console.log(JSON.stringify({ path, shape: c.shape, data: out }));
  } catch (e) {
    console.log(JSON.stringify({ path, error: String(e) }));
  }
}
