package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/zfuse/zfuse/store/remote"
)

// Writing, for zfuse compress's s3:// DEST. An object is written whole by
// one PutObject or, larger than Config.PartSize, by a multipart upload
// that is completed only when every part is in, and aborted when one
// fails: readers (and listings) see the whole object or nothing. An upload
// whose process was killed is invisible too, until AbortUploads removes
// it. Every request runs under the Store's in-flight limit, with the
// SDK's retries and the Store's backoff (Config.Backoff).

// DefaultPartSize is Config.PartSize's default.
const DefaultPartSize = 16 << 20

const (
	maxParts      = 10000 // S3's limit on the parts of one upload
	partsInFlight = 4     // parts of one object uploaded at once
)

// unsignedPayload sends a value with a CRC32 checksum (in a signed header,
// checked by the server) instead of a SHA-256 of it in the signature: the
// SHA-256, computed here and again by the server, cost more CPU than the
// encoding (zfuse bench compress). Over http:// the value is then guarded
// against corruption, not against a forger in the middle: use https://
// where the network is not trusted.
var unsignedPayload = s3.WithAPIOptions(v4.AddUnsignedPayloadMiddleware) // before the checksum, which would hash for the signature too

// WriteKey stores b as the value of key, replacing any value it had. The
// caller keeps b; it is not used after WriteKey returns.
func (s *Store) WriteKey(ctx context.Context, key string, b []byte) error {
	if err := remote.CheckKey(ctx, "write", key); err != nil {
		return err
	}
	defer s.facts.Forget(key) // the next response about key is this version
	start := time.Now()
	var err error
	op := "PUT"
	if int64(len(b)) > s.partSize {
		op = "multipart PUT"
		err = s.putParts(ctx, key, b)
	} else {
		_, err = call(ctx, s, func(ctx context.Context) (*s3.PutObjectOutput, error) {
			return s.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: &s.bucket, Key: aws.String(s.key(key)),
				Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
			}, unsignedPayload)
		})
	}
	s.log.DebugContext(ctx, "s3", "op", op, "key", key, "n", len(b), "took", time.Since(start), "err", err)
	if err != nil {
		return &fs.PathError{Op: "s3 " + op, Path: key, Err: s.writeErr(ctx, err)}
	}
	return nil
}

// putParts writes b to key with a multipart upload: parts of at least
// Config.PartSize (more, if it takes more than S3's 10,000 parts), a few
// at a time; on any failure, or ctx ending, the upload is aborted.
func (s *Store) putParts(ctx context.Context, key string, b []byte) error {
	size := s.partSize
	for (int64(len(b))+size-1)/size > maxParts {
		size *= 2
	}
	n := int((int64(len(b)) + size - 1) / size)
	up, err := call(ctx, s, func(ctx context.Context) (*s3.CreateMultipartUploadOutput, error) {
		return s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
			Bucket: &s.bucket, Key: aws.String(s.key(key)), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		})
	})
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, n)
	// On a failure, no part starts, but those in flight are let finish:
	// a part still arriving at the server after the abort could outlive it.
	var g errgroup.Group
	g.SetLimit(partsInFlight)
	var failed atomic.Bool
	for i := range n {
		if failed.Load() {
			break
		}
		g.Go(func() error {
			p := b[int64(i)*size : min(int64(i+1)*size, int64(len(b)))]
			out, err := call(ctx, s, func(ctx context.Context) (*s3.UploadPartOutput, error) {
				return s.client.UploadPart(ctx, &s3.UploadPartInput{
					Bucket: &s.bucket, Key: aws.String(s.key(key)), UploadId: up.UploadId,
					PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p))),
					ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
				}, unsignedPayload)
			})
			if err != nil {
				failed.Store(true)
				return fmt.Errorf("part %d of %d: %w", i+1, n, err)
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1)), ChecksumCRC32: out.ChecksumCRC32}
			return nil
		})
	}
	err = g.Wait()
	if err == nil {
		_, err = call(ctx, s, func(ctx context.Context) (*s3.CompleteMultipartUploadOutput, error) {
			return s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
				Bucket: &s.bucket, Key: aws.String(s.key(key)), UploadId: up.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
			})
		})
	}
	if err != nil {
		s.abort(ctx, key, up.UploadId)
	}
	return err
}

// abort aborts an upload of key, even when ctx has ended (an interrupted
// run): the parts sent so far would otherwise stay, invisible, and cost
// storage. A part that was in flight (ctx ended) may still land after an
// abort, so the upload is looked for again, and aborted again, a few
// times. One that cannot be aborted now is logged; AbortUploads removes it
// later.
func (s *Store) abort(ctx context.Context, key string, id *string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var err error
	for try := range 4 {
		_, err = call(actx, s, func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
			return s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.key(key)), UploadId: id})
		})
		if err != nil && !isCode(err, "NoSuchUpload") {
			break
		}
		err = nil
		var left bool
		if left, err = s.uploading(actx, key, aws.ToString(id)); err != nil || !left {
			break
		}
		time.Sleep(time.Duration(100<<try) * time.Millisecond) // a part still landing
	}
	if err != nil {
		s.log.WarnContext(ctx, "a failed multipart upload could not be aborted (zfuse compress --resume aborts it)", "key", key, "err", s.writeErr(actx, err))
	}
}

// uploading reports whether the upload id of key is still listed.
func (s *Store) uploading(ctx context.Context, key, id string) (bool, error) {
	out, err := call(ctx, s, func(ctx context.Context) (*s3.ListMultipartUploadsOutput, error) {
		return s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.key(key))})
	})
	if err != nil {
		return false, err
	}
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) == s.key(key) && aws.ToString(u.UploadId) == id {
			return true, nil
		}
	}
	return false, nil
}

// RemoveKey removes key's value; a key that does not exist is no error.
func (s *Store) RemoveKey(ctx context.Context, key string) error {
	if err := remote.CheckKey(ctx, "remove", key); err != nil {
		return err
	}
	defer s.facts.Forget(key)
	_, err := call(ctx, s, func(ctx context.Context) (*s3.DeleteObjectOutput, error) {
		return s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	})
	s.log.DebugContext(ctx, "s3", "op", "DELETE", "key", key, "err", err)
	if err != nil && !isCode(err, "NoSuchKey") {
		return &fs.PathError{Op: "s3 DELETE", Path: key, Err: s.writeErr(ctx, err)}
	}
	return nil
}

// Walk calls fn with the key and size of every value under dir ("." for
// the whole store), at any depth, in the server's order (lexical, for
// S3), with ListObjectsV2 pages of up to 1000 keys; an error from fn
// stops it and is returned. A dir with nothing under it is no error.
// Keys that cannot be keys of the store (directory markers, "..") are
// left out.
func (s *Store) Walk(ctx context.Context, dir string, fn func(key string, size int64) error) error {
	if err := remote.CheckKey(ctx, "list", dir); err != nil {
		return err
	}
	prefix := s.prefix
	if dir != "." {
		prefix += dir + "/"
	}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		var page *s3.ListObjectsV2Output
		err := s.backoff.Do(ctx, func(ctx context.Context) error {
			var err error
			page, err = call(ctx, s, func(ctx context.Context) (*s3.ListObjectsV2Output, error) {
				return p.NextPage(ctx)
			})
			s.log.DebugContext(ctx, "s3", "op", "LIST", "key", dir, "recursive", true, "err", err)
			if err != nil {
				return s.mapErr(ctx, dir, err)
			}
			return nil
		})
		if err != nil {
			return &fs.PathError{Op: "s3 LIST", Path: dir, Err: err}
		}
		for _, o := range page.Contents {
			k, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || !fs.ValidPath(k) || k == "." {
				continue
			}
			if err := fn(k, aws.ToInt64(o.Size)); err != nil {
				return err
			}
		}
	}
	return nil
}

// AbortUploads aborts the unfinished multipart uploads under the store's
// prefix whose key mine accepts (those of a killed writer; mine leaves out
// the keys other writers, working at the same time, may be uploading),
// and returns how many it aborted.
func (s *Store) AbortUploads(ctx context.Context, mine func(key string) bool) (int, error) {
	n := 0
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix)})
	for p.HasMorePages() {
		page, err := call(ctx, s, func(ctx context.Context) (*s3.ListMultipartUploadsOutput, error) {
			return p.NextPage(ctx)
		})
		s.log.DebugContext(ctx, "s3", "op", "LIST uploads", "err", err)
		if err != nil {
			return n, &fs.PathError{Op: "s3 LIST uploads", Path: ".", Err: s.writeErr(ctx, err)}
		}
		for _, u := range page.Uploads {
			k, ok := strings.CutPrefix(aws.ToString(u.Key), s.prefix)
			if !ok || !fs.ValidPath(k) || !mine(k) {
				continue
			}
			_, err := call(ctx, s, func(ctx context.Context) (*s3.AbortMultipartUploadOutput, error) {
				return s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			})
			if err != nil && !isCode(err, "NoSuchUpload") {
				return n, &fs.PathError{Op: "s3 abort upload", Path: k, Err: s.writeErr(ctx, err)}
			}
			s.log.InfoContext(ctx, "aborted an unfinished multipart upload", "key", k, "initiated", aws.ToTime(u.Initiated))
			n++
		}
	}
	return n, nil
}

// writeErr gives the errors of writes the meaning the store promises:
// no such bucket (not a missing key), forbidden, or as they are.
func (s *Store) writeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *awshttp.ResponseError
	switch {
	case isCode(err, "NoSuchBucket"):
		return fmt.Errorf("no such bucket %q: %w", s.bucket, fs.ErrNotExist)
	case errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound: // NoSuchUpload: aborted meanwhile
		return fmt.Errorf("%v: %w", err, fs.ErrNotExist)
	}
	return s.mapErr(ctx, "", err)
}

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
