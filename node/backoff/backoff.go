// Package backoff is the node's one retry delay: cenkalti/backoff's
// exponential backoff with jitter, bounded so that no delay is shorter than
// its minimum or longer than its maximum.
//
// Every loop of the node that waits after a failure (discovery's dials,
// lookups, advertisements and bootstrap attempts, the federation's DHT
// puts, the fanout's resubscriptions, the MQTT gateway's reconnections)
// takes its delays from a Backoff, so they all grow and spread alike: the
// delay doubles with each failure, each one drawn at random within ±50 %
// of its nominal value so that nodes that failed together do not retry
// together, and clamped to [min, max]. Sleep is the wait itself, cut
// short when the loop's context ends.
package backoff

import (
	"context"
	"time"

	cbackoff "github.com/cenkalti/backoff/v5"
)

const (
	// multiplier is the growth of the nominal delay per failure: the
	// doubling every retry loop of the node used before it had jitter.
	multiplier = 2
	// randomization is how far a delay strays from its nominal value,
	// as a fraction of it (cenkalti/backoff's default).
	randomization = cbackoff.DefaultRandomizationFactor
)

// Backoff yields the delays before successive retries. It implements
// cenkalti/backoff's BackOff, so it also serves backoff.Retry. Like
// cenkalti's ExponentialBackOff, it is not safe for concurrent use: give
// each retry loop its own.
type Backoff struct {
	exp      cbackoff.ExponentialBackOff
	min, max time.Duration
}

var _ cbackoff.BackOff = (*Backoff)(nil)

// New returns a backoff whose first delay is about lo and whose delays
// grow from there up to hi; every delay lies within [lo, hi] (a hi below
// lo counts as lo).
func New(lo, hi time.Duration) *Backoff {
	hi = max(hi, lo)
	b := &Backoff{
		exp: cbackoff.ExponentialBackOff{
			InitialInterval:     lo,
			RandomizationFactor: randomization,
			Multiplier:          multiplier,
			MaxInterval:         hi,
		},
		min: lo,
		max: hi,
	}
	b.exp.Reset()
	return b
}

// NextBackOff returns the delay before the next retry.
func (b *Backoff) NextBackOff() time.Duration {
	return min(max(b.exp.NextBackOff(), b.min), b.max)
}

// Reset starts the delays over from the minimum, after a success.
func (b *Backoff) Reset() {
	b.exp.Reset()
}

// Sleep waits d, or until ctx ends: the wait between two tries of every
// retry loop. It reports whether the whole of d went by (false: ctx
// ended first).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
