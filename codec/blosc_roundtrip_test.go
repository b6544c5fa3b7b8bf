package codec

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// bloscRoundTripPy encodes random buffers with numcodecs 0.11 (the c-blosc
// it links) across cname x shuffle x typesize x length x blocksize x clevel,
// and writes NAME.raw / NAME.enc pairs plus a manifest line per case.
const bloscRoundTripPy = `
import sys, os
import numpy as np
from numcodecs import blosc
blosc.set_nthreads(1)
out = sys.argv[1]
rng = np.random.default_rng(int(sys.argv[2]))
cnames = ['blosclz', 'lz4', 'lz4hc', 'snappy', 'zlib', 'zstd']
counts = [1, 2, 3, 31, 100, 127, 128, 257, 1000, 4099, 20000, 70001]
man = open(os.path.join(out, 'manifest.txt'), 'w')
i = 0
for cname in cnames:
    for shuffle in (0, 1, 2):
        for ts in (1, 2, 3, 4, 8, 16, 17):
            for rep in range(2):
                n = int(rng.choice(counts))
                if ts >= 16 and n > 20000:
                    n //= 4
                bs = int(rng.choice([0, 0, 256, 4096, 65536, 100000]))
                clevel = int(rng.choice([0, 1, 5, 9]))
                nb = n * ts
                kind = i % 3
                if kind == 0:
                    data = rng.integers(0, 256, nb, dtype=np.uint8)
                elif kind == 1:
                    data = np.cumsum(rng.integers(-2, 3, nb // 4 + 1)).astype('<i4').view(np.uint8)[:nb]
                else:
                    data = (np.arange(nb) // int(rng.integers(1, 40))).astype(np.uint8)
                arr = np.frombuffer(data.tobytes(), dtype='V%d' % ts) if ts > 1 else data
                enc = blosc.compress(arr, cname.encode(), clevel, shuffle, bs)
                name = 'c%03d' % i
                open(os.path.join(out, name + '.raw'), 'wb').write(data.tobytes())
                open(os.path.join(out, name + '.enc'), 'wb').write(enc)
                man.write('%s cname=%s clevel=%d shuffle=%d typesize=%d n=%d blocksize=%d\n' % (name, cname, clevel, shuffle, ts, n, bs))
                i += 1
# typesizes past 255 are stored as 1
for ts in (255, 256):
    data = rng.integers(0, 4, ts * 300, dtype=np.uint8)
    enc = blosc.compress(np.frombuffer(data.tobytes(), dtype='V%d' % ts), b'lz4', 5, 1, 0)
    name = 'c%03d' % i
    open(os.path.join(out, name + '.raw'), 'wb').write(data.tobytes())
    open(os.path.join(out, name + '.enc'), 'wb').write(enc)
    man.write('%s cname=lz4 typesize=%d\n' % (name, ts))
    i += 1
man.close()
`

// TestBloscRoundTripNumcodecs decodes a few hundred buffers that numcodecs
// 0.11 encodes on the spot and compares with their originals.
func TestBloscRoundTripNumcodecs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Python fixtures")
	}
	testutil.NeedPython(t, "numcodecs", "numpy")
	dir := t.TempDir()
	cmd := exec.Command(testutil.Python, "-c", bloscRoundTripPy, dir, "20261130")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	man, err := os.Open(filepath.Join(dir, "manifest.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer man.Close()
	cases, flags := 0, map[byte]int{}
	sc := bufio.NewScanner(man)
	for sc.Scan() {
		name, desc, _ := strings.Cut(sc.Text(), " ")
		raw, err1 := os.ReadFile(filepath.Join(dir, name+".raw"))
		enc, err2 := os.ReadFile(filepath.Join(dir, name+".enc"))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		cases++
		flags[enc[2]]++
		got, err := decodeExact(t, Blosc{}, enc, len(raw))
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s (%s, flags %#02x): %v, equal %v", name, desc, enc[2], err, bytes.Equal(got, raw))
			continue
		}
		bloscCheck(t, enc, len(raw))
	}
	if cases < 250 {
		t.Fatalf("only %d cases", cases)
	}
	t.Logf("%d cases, flag bytes seen: %v", cases, flags)
}
