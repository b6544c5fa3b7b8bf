package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// zfuse compress at scale: into an S3 DEST (versitygw on 127.0.0.1), and
// one job split in parts (--part K/N) that run at once, are SIGKILLed,
// resume and are finished (--finish); the output read back by zarrita (the
// objects as the gateway stores them) and by zarr-python 2.13 through a
// zfuse mount of the bucket (--as-v2), equal to the source; DESTs that
// hold another store refused before any write, naming the difference; and
// the examples of docs/compress-at-scale.md run as they are.

// scaleStore writes a group of two arrays with zarr-python: t2m, float32
// (192, 512, 64) in (8, 64, 64) chunks, 24 MiB of smooth field plus noise
// (Zstd stores it in about 21 MiB: one shard of it is a multipart
// upload), and counts, int32 (300, 200) in (50, 64) chunks, some all
// zero (left out); attributes, consolidated metadata.
func scaleStore(t testing.TB) string {
	t.Helper()
	needMount(t) // builds the binary; compress itself needs no FUSE
	needPython(t)
	src := filepath.Join(t.TempDir(), "scale.zarr")
	script := `import sys, numpy as np, zarr, numcodecs
g = zarr.open_group(sys.argv[1], mode="w")
g.attrs["title"] = "scale"
a = g.create_dataset("t2m", shape=(192, 512, 64), chunks=(8, 64, 64), dtype="<f4", compressor=numcodecs.Zstd(1))
a[:] = (np.arange(192*512*64, dtype="f4").reshape(192, 512, 64) % 977) + np.random.default_rng(0).random((192, 512, 64), dtype="f4")
a.attrs["units"] = "K"
c = g.create_dataset("counts", shape=(300, 200), chunks=(50, 64), dtype="<i4", compressor=None, fill_value=0)
v = np.arange(300*200, dtype="i4").reshape(300, 200)
v[100:200, :] = 0
c[:] = v
zarr.consolidate_metadata(sys.argv[1])`
	if out, err := exec.Command(testutil.Python, "-c", script, src).CombinedOutput(); err != nil {
		t.Fatalf("writing the store: %v\n%s", err, out)
	}
	return src
}

// s3Dest starts versitygw, keeping object metadata (multipart uploads
// need their parts' ETags, which --nometa has not), with an empty bucket
// "out", and gives this test's processes its credentials. It returns the
// gateway's directory and the flags that reach it.
func s3Dest(t *testing.T) (root string, flags []string) {
	t.Helper()
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "out"), 0o755)
	_, endpoint := startVersitygwWith(t, root)
	s3Setenv(t)
	return root, []string{"--s3-endpoint", endpoint, "--s3-path-style"}
}

// noUploads fails the test if the gateway at root holds an unfinished
// multipart upload in bucket.
func noUploads(t *testing.T, root, bucket string) {
	t.Helper()
	var left []string
	filepath.WalkDir(filepath.Join(root, bucket, ".sgwtmp", "multipart"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("unfinished multipart uploads left: %v", left)
	}
}

// readBack checks the v3 store that the gateway at root holds under
// bucket/prefix against src: zarrita reads the objects as stored (the
// posix backend's files are the objects' bytes), zarr-python 2.13 reads
// through a zfuse mount of s3://bucket/prefix (--as-v2).
func readBack(t *testing.T, src, root, url string, s3flags []string) {
	t.Helper()
	arrays := []string{"t2m", "counts"}
	wantFile := filepath.Join(t.TempDir(), "want.json")
	pyChecks(t, "compress_check.py", append([]string{"digest", src, wantFile}, arrays...)...)
	var want map[string]struct {
		Shape  []int
		Sha256 string
	}
	if err := json.Unmarshal(testutil.Must(os.ReadFile(wantFile)), &want); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, strings.TrimPrefix(url, "s3://"))
	sc := bufio.NewScanner(bytes.NewReader(node(t, "digest.mjs", append([]string{dir}, arrays...)...)))
	n := 0
	for sc.Scan() {
		var r struct {
			Path, Error, Sha256 string
			Shape               []int
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("digest.mjs printed %q: %v", sc.Text(), err)
		}
		n++
		if w := want[r.Path]; r.Error != "" || r.Sha256 != w.Sha256 || !slices.Equal(r.Shape, w.Shape) {
			t.Errorf("zarrita: %s: %v %s %s; want %v %s", r.Path, r.Shape, r.Sha256, r.Error, w.Shape, w.Sha256)
		}
	}
	if n != len(arrays) {
		t.Errorf("zarrita read %d arrays, want %d", n, len(arrays))
	}
	m := mount(t, url, append(slices.Clone(s3flags), "--as-v2")...)
	pyChecks(t, "compress_check.py", "same", src, m.Dir)
}

// tree lists the files under dir with their sizes and modification
// times: what a refused run must leave as it was.
func tree(t testing.TB, dir string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				out[p] = fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
			}
		}
		return nil
	})
	return out
}

// TestCompressS3: one process writes an S3 DEST, sharded v3 with a shard
// larger than a multipart part (so uploaded in parts), and no upload is
// left; zarrita and zarr-python read it back equal to the source. Resumed
// with other settings (another codec, another format), the finished store
// is refused before anything is written, naming the difference.
func TestCompressS3(t *testing.T) {
	src := scaleStore(t)
	root, s3 := s3Dest(t)
	dest := "s3://out/one.zarr"
	args := append([]string{"compress", "--progress", "none", "--log-level", "debug", "--format", "v3", "--shard", "64MiB", "--codec", "zstd:1"}, s3...)
	_, errOut, err := run(append(args, src, dest)...)
	if err != nil || bytes.Contains(errOut, []byte("DATA RACE")) {
		t.Fatalf("zfuse compress into %s: %v\n%s", dest, err, errOut)
	}
	if !bytes.Contains(errOut, []byte(`op="multipart PUT" key=t2m/c/0/0/0`)) {
		t.Errorf("t2m's one shard was not a multipart upload:\n%s", lastLines(errOut, 20))
	}
	if fi, err := os.Stat(filepath.Join(root, "out", "one.zarr", "t2m", "c", "0", "0", "0")); err != nil || fi.Size() < 16<<20 {
		t.Errorf("the shard: %v, %v", fi, err)
	}
	noUploads(t, root, "out")
	readBack(t, src, root, dest, s3)

	before := tree(t, root)
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"--format", "v3", "--shard", "64MiB", "--codec", "lz4"}, "zarr.json codecs"},
		{[]string{"--format", "v2", "--codec", "zstd:1"}, "zarr.json: in DEST"},
	} {
		_, errOut, err := run(append(append(append([]string{"compress", "--progress", "none", "--resume"}, s3...), tc.args...), src, dest)...)
		if err == nil || !bytes.Contains(errOut, []byte(tc.why)) || !bytes.Contains(errOut, []byte("refused before writing anything")) {
			t.Errorf("resuming with %v: %v, want a refusal naming %q:\n%s", tc.args, err, tc.why, errOut)
		}
	}
	if after := tree(t, root); !maps.Equal(before, after) {
		t.Errorf("a refused run changed the bucket")
	}
}

// startPart starts zfuse compress with args in the background; wait
// returns its stderr and error.
func startPart(t *testing.T, args ...string) (wait func() (string, error)) {
	t.Helper()
	cmd := exec.Command(zfuse, append([]string{"compress"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var err error
	return func() (string, error) {
		once.Do(func() { err = cmd.Wait() })
		return stderr.String(), err
	}
}

// TestCompressParts: one job in four parts into one S3 DEST. Parts 0, 1
// and 2 run at once, parts 0 and 1 SIGKILLed after some objects; part 3
// has not run. --finish refuses, naming parts 0, 1 and 3, and writes
// nothing; parts 0 and 1 resumed and part 3 run at once, --finish writes
// the metadata and removes the records, and zarrita and zarr-python read
// the store back equal to the source. Each part reports its progress as
// its own.
func TestCompressParts(t *testing.T) {
	src := scaleStore(t)
	root, s3 := s3Dest(t)
	dest := "s3://out/parts.zarr"
	settings := []string{"--format", "v3", "--shard", "2x2x1", "--codec", "blosc:zstd:3:shuffle"}
	part := func(k string, extra ...string) []string {
		return append(append(append(append([]string{"--progress", "none", "--part", k + "/4"}, s3...), settings...), extra...), src, dest)
	}
	waits := []func() (string, error){startPart(t, part("2")...)}
	for _, k := range []string{"0", "1"} {
		killCompress(t, src, dest, 3, part(k)[:len(part(k))-2]...)
	}
	for _, w := range waits {
		if errOut, err := w(); err != nil {
			t.Fatalf("a part: %v\n%s", err, errOut)
		}
	}
	dir := filepath.Join(root, "out", "parts.zarr")
	before := tree(t, root)
	_, errOut, err := run(append(append([]string{"compress", "--progress", "none", "--finish"}, s3...), src, dest)...)
	if err == nil || !bytes.Contains(errOut, []byte("part 0/4 has not written its whole share")) || !bytes.Contains(errOut, []byte("part 1/4 has not written its whole share")) ||
		!bytes.Contains(errOut, []byte("part 3/4 has not run")) || bytes.Contains(errOut, []byte("part 2/4")) {
		t.Errorf("--finish with parts 0 and 1 killed and part 3 not run: %v\n%s", err, errOut)
	}
	if after := tree(t, root); !maps.Equal(before, after) {
		t.Errorf("the refused --finish changed the bucket")
	}
	if _, err := os.Stat(filepath.Join(dir, "zarr.json")); err == nil {
		t.Fatal("metadata written while parts were missing")
	}

	waits = []func() (string, error){startPart(t, part("0", "--resume")...), startPart(t, part("1", "--resume")...), startPart(t, part("3", "--progress", "plain")...)}
	for k, w := range waits {
		errOut, err := w()
		if err != nil || strings.Contains(errOut, "DATA RACE") {
			t.Fatalf("a part: %v\n%s", err, errOut)
		}
		if k == 2 && !strings.Contains(errOut, "compress part 3/4: 100%") {
			t.Errorf("part 3's progress:\n%s", errOut)
		}
	}
	sum := compressStore(t, src, dest, append([]string{"--finish"}, s3...)...)
	if !regexp.MustCompile(`job: 4 parts, \d+ objects`).MatchString(sum) || !regexp.MustCompile(`(?m)^part 1/4: `).MatchString(sum) {
		t.Errorf("the job's summary:\n%s", sum)
	}
	if !keptSome(sum) {
		t.Errorf("the resumed parts kept nothing of what their killed runs wrote:\n%s", sum)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".zfuse-compress*")); len(m) > 0 {
		t.Errorf("records left: %v", m)
	}
	noUploads(t, root, "out")
	readBack(t, src, root, dest, s3)
}

// TestCompressExamples runs the examples of docs/compress-at-scale.md as
// they are, each with this test's SOURCE, DEST and S3 endpoint in place
// of theirs: the xargs block, the Slurm job array script under bash once
// per task, all at once, and the Kubernetes Jobs' commands as Kubernetes
// runs them (YAML parsed, $(VAR) expanded from the container's env and
// JOB_COMPLETION_INDEX, every index at once). Each DEST must end up
// holding the same files as one process writes with the same flags.
func TestCompressExamples(t *testing.T) {
	needMount(t) // builds the binary
	needPython(t)
	docs := filepath.Join(repo, "docs")
	src := conformance(t, "zarrita.js/fixtures/v2/data.zarr")
	bin := t.TempDir()
	if err := os.Symlink(zfuse, filepath.Join(bin, "zfuse")); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	// same checks that dest holds what one process writes with flags.
	same := func(t *testing.T, dest string, flags ...string) {
		t.Helper()
		one := filepath.Join(t.TempDir(), "one.zarr")
		compressStore(t, src, one, flags...)
		want, got := tree(t, one), tree(t, dest)
		if len(got) != len(want) {
			t.Errorf("%d files, one process wrote %d", len(got), len(want))
		}
		for p := range want {
			rel := testutil.Must(filepath.Rel(one, p))
			if !bytes.Equal(testutil.Must(os.ReadFile(p)), testutil.Must(os.ReadFile(filepath.Join(dest, rel)))) {
				t.Errorf("%s differs from one process's", rel)
			}
		}
	}
	t.Run("xargs", func(t *testing.T) {
		md := string(testutil.Must(os.ReadFile(filepath.Join(docs, "compress-at-scale.md"))))
		_, block, ok := strings.Cut(md, "<!-- integration/compress_scale_test.go runs this block")
		_, block, _ = strings.Cut(block, "```sh\n")
		block, _, _ = strings.Cut(block, "```")
		first, rest, _ := strings.Cut(block, "\n")
		if !ok || !regexp.MustCompile(`^SOURCE=\S+ DEST=\S+ N=\d+$`).MatchString(first) || !strings.Contains(rest, "xargs -P") {
			t.Fatalf("no xargs block found in docs/compress-at-scale.md:\n%s", block)
		}
		dest := filepath.Join(t.TempDir(), "xargs.zarr")
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", rest)
		cmd.Env = append(os.Environ(), "PATH="+path, "SOURCE="+src, "DEST="+dest, "N=3")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the xargs block: %v\n%s", err, out)
		}
		same(t, dest)
	})
	t.Run("slurm", func(t *testing.T) {
		script := filepath.Join(docs, "compress.sbatch")
		text := string(testutil.Must(os.ReadFile(script)))
		arr := regexp.MustCompile(`(?m)^#SBATCH --array=0-(\d+)$`).FindStringSubmatch(text)
		n := regexp.MustCompile(`(?m)^N=(\d+)$`).FindStringSubmatch(text)
		if arr == nil || n == nil || fmt.Sprint(testutil.Must(atoi(arr[1]))+1) != n[1] {
			t.Fatalf("compress.sbatch: --array %v and N %v do not agree", arr, n)
		}
		flags := commandFlags(t, text[strings.Index(text, "exec zfuse compress"):], "--resume", "--part", "--workers", "--progress")
		dest := filepath.Join(t.TempDir(), "slurm.zarr")
		var waits []func() error
		for k := range testutil.Must(atoi(n[1])) {
			cmd := exec.Command("bash", script)
			cmd.Env = append(os.Environ(), "PATH="+path, "SOURCE="+src, "DEST="+dest, fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", k), "SLURM_CPUS_PER_TASK=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waits = append(waits, func() error {
				if err := cmd.Wait(); err != nil {
					return fmt.Errorf("task %d: %v\n%s", k, err, &out)
				}
				return nil
			})
		}
		for _, w := range waits {
			if err := w(); err != nil {
				t.Error(err)
			}
		}
		// The finish, as the script's comment submits it.
		_, wrap, _ := strings.Cut(text, "--wrap '")
		wrap, _, _ = strings.Cut(wrap, "'")
		cmd := exec.Command("bash", "-c", wrap)
		cmd.Env = append(os.Environ(), "PATH="+path, "SOURCE="+src, "DEST="+dest)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "job: 8 parts") {
			t.Fatalf("the finish (%s): %v\n%s", wrap, err, out)
		}
		same(t, dest, flags...)
	})
	t.Run("kubernetes", func(t *testing.T) {
		root, s3 := s3Dest(t)
		copyTree(t, src, filepath.Join(root, "raw", "data.zarr"))
		env := map[string]string{"SOURCE": "s3://raw/data.zarr", "DEST": "s3://out/k8s.zarr", "S3_ENDPOINT": s3[1]}
		job, finish := k8sCommand(t, filepath.Join(docs, "compress-job.yaml"), env), k8sCommand(t, filepath.Join(docs, "compress-finish-job.yaml"), env)
		if job.mode != "Indexed" || job.completions < 2 || job.parallelism > job.completions || !slices.Contains(job.argv, fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", job.completions)) {
			t.Fatalf("compress-job.yaml: mode %q, completions %d, parallelism %d, command %v: not an indexed Job of --part INDEX/completions",
				job.mode, job.completions, job.parallelism, job.argv)
		}
		var waits []func() (string, error)
		for k := range job.completions {
			argv := job.expand(map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(k)})
			if argv[0] != "zfuse" || argv[1] != "compress" {
				t.Fatalf("the Job runs %v", argv)
			}
			waits = append(waits, startPart(t, argv[2:]...))
		}
		for _, w := range waits {
			if errOut, err := w(); err != nil {
				t.Fatalf("a pod: %v\n%s", err, errOut)
			}
		}
		argv := finish.expand(nil)
		out, errOut, err := run(argv[1:]...)
		if err != nil || !strings.Contains(string(out), fmt.Sprintf("job: %d parts", job.completions)) {
			t.Fatalf("the finish Job (%v): %v\n%s%s", argv, err, out, errOut)
		}
		// The flags that shape the output, as the Job gives them.
		flags := commandFlags(t, strings.Join(argv, " "), "--finish", "--s3-endpoint", "--s3-path-style")
		same(t, filepath.Join(root, "out", "k8s.zarr"), flags...)
	})
}

func atoi(s string) (int, error) {
	var n int
	_, err := fmt.Sscan(s, &n)
	return n, err
}

// commandFlags returns the flags of a zfuse compress command line (up to
// its last two words, SOURCE and DEST), without those named in drop and
// their values.
func commandFlags(t *testing.T, line string, drop ...string) []string {
	t.Helper()
	line = strings.ReplaceAll(line, "\\\n", " ")
	line, _, _ = strings.Cut(line, "\n")
	words := strings.Fields(line)
	i := slices.Index(words, "compress")
	if i < 0 || len(words) < i+3 {
		t.Fatalf("no zfuse compress command in %q", line)
	}
	words = words[i+1 : len(words)-2]
	var out []string
	for j := 0; j < len(words); j++ {
		w := words[j]
		takesValue := !slices.Contains([]string{"--resume", "--finish", "--s3-path-style", "--verify", "--write-empty"}, w)
		if slices.Contains(drop, w) {
			if takesValue {
				j++
			}
			continue
		}
		out = append(out, w)
		if takesValue && j+1 < len(words) {
			j++
			out = append(out, words[j])
		}
	}
	return out
}

// A k8sJob is what a Job's YAML says about its one container.
type k8sJob struct {
	mode                     string
	completions, parallelism int
	argv                     []string
	env                      map[string]string // name -> value (values from secrets left out)
}

// k8sCommand parses the Job at file (with PyYAML) and sets the env values
// named in override, as a user adapts the file.
func k8sCommand(t *testing.T, file string, override map[string]string) *k8sJob {
	t.Helper()
	script := `import json, sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
assert len(docs) == 1 and docs[0]["kind"] == "Job" and docs[0]["apiVersion"] == "batch/v1", "not one batch/v1 Job"
spec = docs[0]["spec"]
pod = spec["template"]["spec"]
assert pod["restartPolicy"] in ("Never", "OnFailure")
c, = pod["containers"]
json.dump({"mode": spec.get("completionMode", "NonIndexed"), "completions": spec.get("completions", 1), "parallelism": spec.get("parallelism", 1),
	"argv": c["command"] + c.get("args", []), "env": {e["name"]: e.get("value") for e in c.get("env", [])}}, sys.stdout)`
	out, err := exec.Command(testutil.Python, "-c", script, file).Output()
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var j struct {
		Mode                     string
		Completions, Parallelism int
		Argv                     []string
		Env                      map[string]*string
	}
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatal(err)
	}
	job := &k8sJob{mode: j.Mode, completions: j.Completions, parallelism: j.Parallelism, argv: j.Argv, env: map[string]string{}}
	for k, v := range j.Env {
		if v != nil {
			job.env[k] = *v
		}
	}
	for k, v := range override {
		if _, ok := job.env[k]; !ok {
			t.Fatalf("%s: its container has no env %s", file, k)
		}
		job.env[k] = v
	}
	return job
}

// expand returns the command with $(VAR) replaced as Kubernetes does:
// from the container's env and extra (what the Job controller adds);
// unknown references stay as written.
func (j *k8sJob) expand(extra map[string]string) []string {
	re := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	out := make([]string, len(j.argv))
	for i, a := range j.argv {
		out[i] = re.ReplaceAllStringFunc(a, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := extra[name]; ok {
				return v
			}
			if v, ok := j.env[name]; ok {
				return v
			}
			return m
		})
	}
	return out
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
