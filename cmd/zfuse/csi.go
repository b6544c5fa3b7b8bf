package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
)

// runCSI is zfuse csi: the CSI node plugin, the binary zfuse-csi beside
// zfuse (cmd/zfuse-csi), apart so that what it links is in no mount's
// memory. Asked for help, it prints the plugin's; otherwise the plugin
// replaces this process, so that the signals of whoever started zfuse csi
// (the kubelet's container runtime) reach it.
func runCSI(args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	plugin := filepath.Join(filepath.Dir(exe), "zfuse-csi")
	if _, err := os.Stat(plugin); err != nil {
		return fmt.Errorf("zfuse csi runs the CSI plugin %s, beside zfuse (make build builds both): %w", plugin, err)
	}
	help := func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }
	if !slices.ContainsFunc(args, help) {
		return syscall.Exec(plugin, append([]string{plugin}, args...), os.Environ())
	}
	cmd := exec.Command(plugin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	return flag.ErrHelp
}
