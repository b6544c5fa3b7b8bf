package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/zfuse/zfuse/convert"
	"github.com/zfuse/zfuse/store/s3store"
)

// openDest opens DEST: s3://bucket/prefix (with the S3 flags of SOURCE),
// or else a local directory, created at the first write.
func openDest(ctx context.Context, arg string, f *sourceFlags, log *slog.Logger) (convert.Destination, error) {
	scheme, _, remote := strings.Cut(arg, "://")
	if !remote {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return nil, fmt.Errorf("DEST %s: %w", arg, err)
		}
		return convert.Dir(abs), nil
	}
	if strings.ToLower(scheme) != "s3" {
		return nil, fmt.Errorf("DEST %s: want a local directory or s3://bucket/prefix", redactSource(arg))
	}
	bucket, prefix, err := s3store.ParseURL(arg)
	if err != nil {
		return nil, err
	}
	s, err := s3store.Open(ctx, s3store.Config{
		Bucket: bucket, Prefix: prefix,
		Endpoint: f.s3Endpoint, Region: f.s3Region, PathStyle: f.s3PathStyle,
		MaxInFlight: f.maxInflight, Timeout: f.timeout, Backoff: f.backoff, Log: log,
	})
	if err != nil {
		return nil, fmt.Errorf("DEST: %w", err)
	}
	return convert.S3(s), nil
}
