// Read Zarr v3 arrays with zarrita (an independent implementation) and
// print one JSON line per array: {"path", "shape", "sha256"}, the SHA-256
// of its values in C order as little-endian float64 (integers and floats
// alike, converted exactly), or {"path", "error"}: arrays too large to
// print as JSON (compress_check.py digest computes the same with numpy).
//
// usage: node digest.mjs ROOT PATH...
// Run it from a directory whose node_modules holds zarrita@0.7.5.
import { createHash } from "node:crypto";
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
for (const path of paths) {
  try {
    const arr = await zarr.open.v3(zarr.root(store).resolve(path), { kind: "array" });
    const c = await zarr.get(arr);
    const n = c.shape.reduce((a, b) => a * b, 1);
    const out = new Float64Array(n);
    const idx = new Array(c.shape.length).fill(0);
    for (let i = 0; i < n; i++) {
      let off = 0;
      for (let d = 0; d < idx.length; d++) off += idx[d] * c.stride[d];
      const v = c.data[off];
      out[i] = typeof v === "bigint" ? Number(v) : v;
      for (let d = idx.length - 1; d >= 0; d--) {
        if (++idx[d] < c.shape[d]) break;
        idx[d] = 0;
      }
    }
    const sha256 = createHash("sha256").update(new Uint8Array(out.buffer)).digest("hex");
    console.log(JSON.stringify({ path, shape: c.shape, sha256 }));
  } catch (e) {
    console.log(JSON.stringify({ path, error: String(e) }));
  }
}
