package remote

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"github.com/zfuse/zfuse/store"
)

// Start is the backoff of what a store reads to open, and without which it
// cannot be mounted at all (its first listing, the metadata documents at
// its root): about half a minute of waits between rounds, where each round
// is one read with its own retries (Backoff.Do). Object stores answer 503
// SlowDown in bursts exactly when many nodes mount at once; one document
// that five quick tries did not get must not refuse the mount.
var Start = Backoff{Attempts: 8, Base: 500 * time.Millisecond, Max: 8 * time.Second}

// Transient reports whether err, the error of a read after its retries,
// may yet be cured by waiting: the server was unavailable, answered 5xx,
// 429 or 408, or answered what was not asked. A missing or forbidden key,
// a key outside the store and an ended context are not.
func Transient(err error) bool {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission),
		errors.Is(err, store.ErrOutside), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return IsRetryable(err) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadResponse)
}

// Patiently calls op, a read that decides what a store is (what holds
// what), until it succeeds, fails with an error that is not Transient,
// ctx ends, or b's attempts are used up (b's zero fields take Start's
// values). Each failure that is to be tried again is logged at Warn,
// naming what. The error of the last call is returned.
func Patiently(ctx context.Context, b Backoff, log *slog.Logger, what string, op func(ctx context.Context) error) error {
	if b.Attempts <= 0 {
		b.Attempts = Start.Attempts
	}
	if b.Base <= 0 {
		b.Base = Start.Base
	}
	if b.Max <= 0 {
		b.Max = Start.Max
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	round := 0
	var last error
	err := b.Do(ctx, func(ctx context.Context) error {
		round++
		last = op(ctx)
		if !Transient(last) {
			return last
		}
		if round < b.Attempts {
			log.WarnContext(ctx, "cannot read what decides what the store is yet: trying again", "key", what, "round", round, "of", b.Attempts, "err", last)
		}
		return Retryable(last)
	})
	if err != nil && last != nil {
		return last // without Do's own wrapping: last says how it ended
	}
	return err
}
