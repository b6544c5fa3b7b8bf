package csidriver

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSettings(t *testing.T) {
	local := []string{"/data", "/srv/zarr/"}
	tests := []struct {
		name    string
		attrs   map[string]string
		secrets map[string]string
		want    Settings
		wantErr []string // substrings of the error, which names the problem
	}{
		{name: "remote source alone", attrs: map[string]string{"source": "s3://bucket/era5.zarr"},
			want: Settings{Source: "s3://bucket/era5.zarr"}},
		{name: "flags by name, sorted, as --name=value",
			attrs: map[string]string{"source": "https://example.org/a.zarr", "memory-limit": "512MiB", "as-v2": "true", "cache-decoded": "2GiB", "s3-endpoint": "-x"},
			want:  Settings{Source: "https://example.org/a.zarr", Flags: []string{"--as-v2=true", "--cache-decoded=2GiB", "--memory-limit=512MiB", "--s3-endpoint=-x"}}},
		{name: "bool flags take any strconv.ParseBool spelling", attrs: map[string]string{"source": "s3://b/p", "as-npy": "1", "s3-path-style": "False"},
			want: Settings{Source: "s3://b/p", Flags: []string{"--as-npy=true", "--s3-path-style=false"}}},
		{name: "array is a comma-separated list", attrs: map[string]string{"source": "http://h/s.zarr", "array": "t2m, group/u,"},
			want: Settings{Source: "http://h/s.zarr", Flags: []string{"--array=t2m", "--array=group/u"}}},
		{name: "the kubelet's pod info is ignored",
			attrs: map[string]string{"source": "/data/a.zarr", "csi.storage.k8s.io/pod.name": "train-0", "csi.storage.k8s.io/ephemeral": "true"},
			want:  Settings{Source: "/data/a.zarr"}},
		{name: "local source in an offered directory", attrs: map[string]string{"source": "/srv/zarr/x/y.zarr"},
			want: Settings{Source: "/srv/zarr/x/y.zarr"}},
		{name: "secrets become the environment, sorted",
			attrs:   map[string]string{"source": "s3://b/p"},
			secrets: map[string]string{"AWS_SECRET_ACCESS_KEY": "s3cr3t", "AWS_ACCESS_KEY_ID": "AKID"},
			want:    Settings{Source: "s3://b/p", Env: []string{"AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=s3cr3t"}}},

		{name: "missing source", attrs: map[string]string{"as-v2": "true"}, wantErr: []string{`"source" is missing`}},
		{name: "empty attributes", attrs: nil, wantErr: []string{`"source" is missing`}},
		{name: "unknown attributes are named", attrs: map[string]string{"source": "s3://b/p", "cache-size": "1GiB", "zz": "1"},
			wantErr: []string{"unknown attributes cache-size, zz"}},
		{name: "flags the driver owns", attrs: map[string]string{"source": "s3://b/p", "log-file": "/etc/passwd", "allow-other": "true"},
			wantErr: []string{"allow-other (the driver mounts with allow_other)", "log-file ("}},
		{name: "a bool that is not", attrs: map[string]string{"source": "s3://b/p", "as-v2": "yes"},
			wantErr: []string{`as-v2="yes" (want true or false)`}},
		{name: "a source that is a flag", attrs: map[string]string{"source": "--help"}, wantErr: []string{"not a flag"}},
		{name: "a relative local source", attrs: map[string]string{"source": "data/a.zarr"}, wantErr: []string{"absolute path"}},
		{name: "a local source outside the offered directories", attrs: map[string]string{"source": "/etc/a.zarr"},
			wantErr: []string{"/etc/a.zarr, outside the directories this node offers (/data, /srv/zarr/)"}},
		{name: "a local source that climbs out", attrs: map[string]string{"source": "/data/../etc"},
			wantErr: []string{"outside the directories"}},
		{name: "a prefix is not a parent", attrs: map[string]string{"source": "/database/a.zarr"},
			wantErr: []string{"outside the directories"}},
		{name: "an unknown scheme", attrs: map[string]string{"source": "gs://b/p"}, wantErr: []string{`unsupported scheme "gs"`}},
		{name: "an unknown secret is named, its value never",
			attrs: map[string]string{"source": "s3://b/p"}, secrets: map[string]string{"password": "hunter2"},
			wantErr: []string{"unknown secret password"}},
		{name: "every problem at once", attrs: map[string]string{"nope": "1", "o": "x"},
			wantErr: []string{"unknown attributes nope", "o (give each flag", `"source" is missing`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSettings(tt.attrs, tt.secrets, local)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				for _, v := range tt.secrets {
					if strings.Contains(err.Error(), v) {
						t.Errorf("error %q shows a secret's value", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.want.Source || !slices.Equal(got.Flags, tt.want.Flags) || !slices.Equal(got.Env, tt.want.Env) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestNoLocalDirs: a node that offers no directories refuses every local
// source, saying which flag offers them.
func TestNoLocalDirs(t *testing.T) {
	_, err := parseSettings(map[string]string{"source": "/data/a.zarr"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "--local-dir") {
		t.Fatalf("got %v, want an error naming --local-dir", err)
	}
}

// TestFlagTables: no flag is both taken and refused.
func TestFlagTables(t *testing.T) {
	for k := range driverFlags {
		if _, ok := mountFlags[k]; ok {
			t.Errorf("%s is in both tables", k)
		}
	}
	if _, ok := mountFlags[sourceKey]; ok {
		t.Errorf("%s is a flag", sourceKey)
	}
}
