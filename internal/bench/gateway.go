package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// A benchGateway is versitygw's posix backend serving a directory as S3
// on 127.0.0.1, for zfuse bench compress's S3 rows: bucket "bench" under
// root, credentials of its own in env, reached with flags.
type benchGateway struct {
	root  string
	env   []string // for the zfuse processes: the credentials, nothing from this machine's AWS setup
	flags []string // --s3-endpoint and --s3-path-style
	cmd   *exec.Cmd
}

// startBenchGateway starts versitygw (bin, else found the usual ways) in
// a directory under dir; nil, nil when there is none.
func startBenchGateway(ctx context.Context, bin, dir string) (*benchGateway, error) {
	if bin == "" {
		bin = findVersitygw()
	}
	if bin == "" {
		return nil, nil
	}
	root, err := os.MkdirTemp(dir, "s3-")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "bench"), 0o755); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	const access, secret = "ZFUSEBENCH", "zfuse-bench-secret"
	// Object metadata in xattrs (no --nometa): multipart uploads need it.
	cmd := exec.CommandContext(ctx, bin, "--port", addr, "posix", root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+access, "ROOT_SECRET_ACCESS_KEY="+secret)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("versitygw: %w", err)
	}
	g := &benchGateway{
		root: root, cmd: cmd,
		env: []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_REGION=us-east-1",
			"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull, "AWS_PROFILE=", "AWS_SESSION_TOKEN=", "AWS_ENDPOINT_URL="},
		flags: []string{"--s3-endpoint", "http://" + addr, "--s3-path-style"},
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return g, nil
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("versitygw: nothing listens on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the port it opens
	}
}

// cpu returns the CPU time the gateway has used, all its threads (0 for
// none, or when /proc cannot say).
func (g *benchGateway) cpu() time.Duration {
	if g == nil {
		return 0
	}
	d, err := CPUTime(g.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	return d
}

func (g *benchGateway) stop() {
	g.cmd.Process.Kill()
	g.cmd.Wait()
}

// findVersitygw looks for versitygw as the tests do: $ZFUSE_VERSITYGW,
// $GOPATH/bin (go install's), $HOME/go/bin, then PATH; "" if none.
func findVersitygw() string {
	if p := os.Getenv("ZFUSE_VERSITYGW"); p != "" {
		return p
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.SplitList(gp)...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "bin", "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	p, err := exec.LookPath("versitygw")
	if errors.Is(err, exec.ErrNotFound) || err != nil {
		return ""
	}
	return p
}
