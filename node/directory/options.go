package directory

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Options.
const (
	// DefaultTTL is how long a learned Thing is kept after its record was
	// last seen: the lifetime of a DHT record, after which a publisher that
	// is still alive has republished it.
	DefaultTTL = 48 * time.Hour
	// DefaultTombstoneTTL is how long the node keeps its own tombstones: well
	// beyond DefaultTTL, so every peer that cached the Thing has either seen
	// the tombstone or let the Thing expire before the tombstone goes.
	DefaultTombstoneTTL = 7 * 24 * time.Hour
	// DefaultPurgeInterval is how often the background loop drops expired
	// entries. Queries hide expired entries in between, so this only bounds
	// how long their memory and disk space are held.
	DefaultPurgeInterval = time.Minute
	// DefaultEventHistory is how many past events a resuming subscriber can
	// catch up on.
	DefaultEventHistory = 1024
	// DefaultSubscriberBuffer is how many events a subscriber may lag behind
	// before it is dropped.
	DefaultSubscriberBuffer = 256
)

// Options configure a Directory. The zero value of every field selects its
// default.
type Options struct {
	// TTL is how long a learned Thing (or learned tombstone) is kept after
	// its record was last seen; every Put of the record refreshes it.
	// Default DefaultTTL.
	TTL time.Duration
	// TombstoneTTL is how long the node's own tombstones are kept. Default
	// DefaultTombstoneTTL.
	TombstoneTTL time.Duration
	// PurgeInterval is the period of the purge loop. Default
	// DefaultPurgeInterval.
	PurgeInterval time.Duration
	// EventHistory is the number of events kept for Subscribe to resume
	// from. Default DefaultEventHistory.
	EventHistory int
	// SubscriberBuffer is the channel capacity of a subscriber; one that
	// falls further behind is dropped. Default DefaultSubscriberBuffer.
	SubscriberBuffer int

	// Logger receives the directory's logs. Default: discarded.
	Logger *slog.Logger
	// Now is the clock, injected by tests. Default time.Now.
	Now func() time.Time
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.TombstoneTTL == 0 {
		o.TombstoneTTL = DefaultTombstoneTTL
	}
	if o.PurgeInterval == 0 {
		o.PurgeInterval = DefaultPurgeInterval
	}
	if o.EventHistory == 0 {
		o.EventHistory = DefaultEventHistory
	}
	if o.SubscriberBuffer == 0 {
		o.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports every option out of range.
func (o Options) Validate() error {
	var errs []error
	if o.TTL < 0 {
		errs = append(errs, fmt.Errorf("directory options: TTL: %s is negative", o.TTL))
	}
	if o.TombstoneTTL < 0 {
		errs = append(errs, fmt.Errorf("directory options: TombstoneTTL: %s is negative", o.TombstoneTTL))
	}
	if o.PurgeInterval < 0 {
		errs = append(errs, fmt.Errorf("directory options: PurgeInterval: %s is negative", o.PurgeInterval))
	}
	if o.EventHistory < 0 {
		errs = append(errs, fmt.Errorf("directory options: EventHistory: %d is negative", o.EventHistory))
	}
	if o.SubscriberBuffer < 0 {
		errs = append(errs, fmt.Errorf("directory options: SubscriberBuffer: %d is negative", o.SubscriberBuffer))
	}
	return errors.Join(errs...)
}
