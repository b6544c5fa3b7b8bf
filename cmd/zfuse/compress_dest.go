package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/zfuse/zfuse/compress"
	"github.com/zfuse/zfuse/store"
	"github.com/zfuse/zfuse/store/s3store"
)

// openDest opens DEST: s3://bucket/prefix (with the S3 flags of SOURCE),
// or else a local directory, created at the first write.
func openDest(ctx context.Context, arg string, f *sourceFlags, log *slog.Logger) (compress.Destination, error) {
	scheme, _, remote := strings.Cut(arg, "://")
	if !remote {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, fmt.Errorf("DEST %s: %w", arg, err)
		}
		return compress.Dir(abs), nil
	}
	if strings.ToLower(scheme) != "s3" {
		return nil, fmt.Errorf("DEST %s: want a local directory or s3://bucket/prefix", store.Redact(arg))
	}
	s, err := s3store.OpenURL(ctx, arg, f.options(log))
	if err != nil {
		return nil, fmt.Errorf("DEST: %w", err)
	}
	return compress.S3(s), nil
}
