package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zfuse/zfuse/internal/testutil"
)

// k8sDocs returns every document of the YAML files in deploy/kubernetes
// (PyYAML), as JSON values, by file.
func k8sDocs(t *testing.T) map[string][]map[string]any {
	t.Helper()
	testutil.NeedPython(t, "yaml")
	files, _ := filepath.Glob(filepath.Join(repo, "deploy", "kubernetes", "*.yaml"))
	script := `import json, sys, yaml
json.dump({f: [d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:]}, sys.stdout)`
	out, err := exec.Command(testutil.Python, append([]string{"-c", script}, files...)...).Output()
	if err != nil {
		t.Fatalf("parsing %v: %v", files, err)
	}
	var docs map[string][]map[string]any
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

// get walks v along path (map keys, or "0", "1", ... for list items).
func get(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := int(p[0] - '0')
			if len(p) != 1 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// flagsOf returns the flags zfuse help CMD lists, each with whether it is
// a boolean one (the flag package prints no kind for those).
func flagsOf(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	out, _, err := run("help", cmd)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)( [^\t\n]+)?`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = m[2] == ""
	}
	return flags
}

// TestCSIFlags: every flag of zfuse mount is one a CSI volume may set as
// an attribute (with the same kind: boolean or not) or one the driver
// refuses, as zfuse help csi lists them, so that a new flag of zfuse mount
// is a decision for both.
func TestCSIFlags(t *testing.T) {
	needMount(t)
	mount := flagsOf(t, "mount")
	out, _, err := run("help", "csi")
	if err != nil {
		t.Fatal(err)
	}
	taken, refused := map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z0-9-]+)(=true\|false|=VALUE|: .*)$`).FindAllStringSubmatch(string(out), -1) {
		if strings.HasPrefix(m[2], ":") {
			refused[m[1]] = true
		} else {
			taken[m[1]] = m[2] == "=true|false"
		}
	}
	if len(taken) == 0 || len(refused) == 0 {
		t.Fatalf("zfuse help csi lists no attributes:\n%s", out)
	}
	for name, isBool := range mount {
		want, ok := taken[name]
		switch {
		case ok && refused[name]:
			t.Errorf("--%s is both taken and refused", name)
		case ok && isBool != want:
			t.Errorf("--%s: zfuse help mount says bool=%v, zfuse help csi %v", name, isBool, want)
		case !ok && !refused[name]:
			t.Errorf("zfuse mount --%s is neither taken nor refused by zfuse csi (csidriver/attributes.go)", name)
		}
	}
	for _, m := range []map[string]bool{taken, refused} {
		for name := range m {
			if _, ok := mount[name]; !ok {
				t.Errorf("zfuse csi names the attribute %s, which is no flag of zfuse mount", name)
			}
		}
	}
}

// TestCSIDeployFiles checks deploy/kubernetes against the binary: the
// CSIDriver object names zfuse csi's driver with the lifecycle modes it
// serves, the DaemonSet runs zfuse csi with flags it has and registers
// its socket under the driver's name, and every volume in the examples
// names the driver and has attributes (and secrets) that zfuse csi takes.
// Each example's volume is published with its attributes and secrets (on
// a local store for its remote one), and the PyTorch job's script runs on
// the S3 example's.
func TestCSIDeployFiles(t *testing.T) {
	needCSI(t)
	docs := k8sDocs(t)
	out, _, _ := run("help", "csi")
	name := regexp.MustCompile(`driver-name string\n.*\(default "([^"]+)"\)`).FindStringSubmatch(string(out))
	if name == nil {
		t.Fatalf("zfuse help csi names no default driver name:\n%s", out)
	}
	driver := name[1]
	csiFlags := flagsOf(t, "csi")

	type volume struct {
		file    string
		attrs   map[string]string
		secrets map[string]string
	}
	var vols []volume
	secrets := map[string]map[string]string{}
	var script string
	for file, ds := range docs {
		file = filepath.Base(file)
		for _, d := range ds {
			switch d["kind"] {
			case "CSIDriver":
				if get(d, "metadata", "name") != driver || get(d, "spec", "podInfoOnMount") != true || get(d, "spec", "attachRequired") != false {
					t.Errorf("%s: CSIDriver %v: want %s, podInfoOnMount, no attach", file, get(d, "metadata", "name"), driver)
				}
				if modes, _ := json.Marshal(get(d, "spec", "volumeLifecycleModes")); string(modes) != `["Persistent","Ephemeral"]` {
					t.Errorf("%s: volumeLifecycleModes %s", file, modes)
				}
			case "DaemonSet":
				pod := get(d, "spec", "template", "spec")
				if get(pod, "hostPID") != true || get(pod, "hostNetwork") != true {
					t.Errorf("%s: the servers need the node's PID and network namespaces to outlive the pod", file)
				}
				b, _ := json.Marshal(pod)
				if !strings.Contains(string(b), "/var/lib/kubelet/plugins/"+driver+"/csi.sock") {
					t.Errorf("%s: the registrar registers no socket under %s", file, driver)
				}
				args, _ := get(pod, "containers", "0", "args").([]any)
				if len(args) == 0 || args[0] != "csi" {
					t.Fatalf("%s: the first container does not run zfuse csi: %v", file, args)
				}
				for _, a := range args[1:] {
					f, _, _ := strings.Cut(strings.TrimLeft(a.(string), "-"), "=")
					if _, ok := csiFlags[f]; !ok {
						t.Errorf("%s: zfuse csi has no flag --%s", file, f)
					}
				}
			case "Secret":
				s := map[string]string{}
				for k, v := range get(d, "stringData").(map[string]any) {
					s[k] = v.(string)
				}
				secrets[get(d, "metadata", "name").(string)] = s
			}
			for _, c := range findCSI(d) {
				if c["driver"] != driver {
					t.Errorf("%s: a volume of driver %v, want %s", file, c["driver"], driver)
				}
				v := volume{file: file, attrs: map[string]string{}}
				for k, val := range c["volumeAttributes"].(map[string]any) {
					v.attrs[k] = val.(string)
				}
				if ref, ok := c["nodePublishSecretRef"].(map[string]any); ok {
					v.secrets = secrets[ref["name"].(string)]
					if v.secrets == nil {
						t.Errorf("%s: the secret %v is not in the file before the volume", file, ref["name"])
					}
				}
				vols = append(vols, v)
			}
			if cmd, ok := get(d, "spec", "template", "spec", "containers", "0", "command").([]any); ok && len(cmd) == 3 && cmd[0] == "python" {
				script = cmd[2].(string)
			}
		}
	}
	if len(vols) < 2 || script == "" {
		t.Fatalf("want the two examples' volumes and the PyTorch job's script; got %d volumes, script %t", len(vols), script != "")
	}

	data := openToAll(t, t.TempDir())
	store := writeCSIStore(t, data, "era5.zarr")
	p := startPlugin(t, data, "")
	ctx := context.Background()
	for _, v := range vols {
		// The examples' stores, on a local store: the tests reach no
		// address but this machine's.
		remote := v.attrs["source"]
		v.attrs["source"] = store
		kv := newKubeletVolume(t, v.attrs)
		kv.Secrets = v.secrets
		if err := kv.publish(ctx, p); err != nil {
			t.Fatalf("%s: the example's volume (on a local store): %v\n%s", v.file, err, p.log)
		}
		if strings.HasPrefix(remote, "s3://") { // the PyTorch job
			testutil.NeedPython(t, "torch", "numpy")
			out, err := exec.Command(testutil.Python, "-c", strings.ReplaceAll(script, "/data/era5/", kv.Target+"/")).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "read 50 days of t2m") {
				t.Errorf("the PyTorch example through %s: %v\n%s", kv.Target, err, out)
			}
			t.Logf("the PyTorch example: %s", strings.TrimSpace(string(out)))
		}
		if err := kv.unpublish(ctx, p); err != nil {
			t.Error(err)
		}
	}
}

// findCSI returns the csi volume sources in the document d: a pod's (or a
// pod template's) inline volumes and a PersistentVolume's.
func findCSI(d map[string]any) []map[string]any {
	var out []map[string]any
	if c, ok := get(d, "spec", "csi").(map[string]any); ok && d["kind"] == "PersistentVolume" {
		out = append(out, c)
	}
	for _, vs := range []any{get(d, "spec", "volumes"), get(d, "spec", "template", "spec", "volumes")} {
		list, _ := vs.([]any)
		for _, v := range list {
			if c, ok := get(v, "csi").(map[string]any); ok {
				out = append(out, c)
			}
		}
	}
	return out
}
