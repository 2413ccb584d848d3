package directory

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	datastore "github.com/ipfs/go-datastore"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Deps are what a Directory works with. Both are required; the caller
// keeps ownership of the datastore and closes it after Close.
type Deps struct {
	// Datastore holds the directory's state (see the package
	// documentation for the layout).
	Datastore datastore.Batching
	// Self is the node's peer ID: records it signed are the node's own
	// Things.
	Self peer.ID
}

// Defaults of Config.
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
	// DefaultOfflineAfter is how long after a publisher was last seen its
	// learned Things count as offline (Entry.Online).
	DefaultOfflineAfter = 5 * time.Minute
)

// Config configures a Directory. The zero value of every field selects its
// default.
type Config struct {
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

	// MaxThingsPerPublisher bounds the learned entries (tombstones
	// included) held per publisher, MaxBytesPerPublisher the bytes of
	// their signed records: a learned record that would take its publisher
	// over either is refused (ErrQuota) and what is held stays. An update
	// counts only what it adds. Own Things count against neither. 0: no
	// limit (the node sets both, see node.QuotaConfig).
	MaxThingsPerPublisher int
	MaxBytesPerPublisher  int64
	// MaxLearnedBytes bounds the bytes of the signed records of all
	// learned entries together, whatever their publishers (sybils
	// multiply per-publisher quotas). A learned record that would go over
	// it evicts learned entries less valuable than itself (Value: the
	// least valuable first, of equal value the least recently used) or,
	// if those do not make room, is refused (OverBudget, ErrBudget). Own
	// Things are never evicted and count against nothing. An evicted
	// Thing is fetched again on demand (a lookup asks the network: see
	// OnEvict). 0: no limit (the node sets it, see node/config
	// QuotaConfig.MaxLearnedBytes).
	MaxLearnedBytes int64
	// OfflineAfter is how long after a publisher was last seen (Seen, or
	// the proof time of a record of it put) its learned Things count as
	// offline. Default DefaultOfflineAfter.
	OfflineAfter time.Duration
	// OfflineTTL, if set, drops the learned entries of a publisher not
	// seen for that long (counted from when the directory began to hold
	// its entries, if it never saw it); the purge loop does. 0: learned
	// entries expire by TTL only (the node sets it, see
	// node.LivenessConfig).
	OfflineTTL time.Duration
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.TombstoneTTL == 0 {
		c.TombstoneTTL = DefaultTombstoneTTL
	}
	if c.PurgeInterval == 0 {
		c.PurgeInterval = DefaultPurgeInterval
	}
	if c.EventHistory == 0 {
		c.EventHistory = DefaultEventHistory
	}
	if c.SubscriberBuffer == 0 {
		c.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if c.OfflineAfter == 0 {
		c.OfflineAfter = DefaultOfflineAfter
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.TTL < 0 {
		errs = append(errs, fmt.Errorf("directory: TTL: %s is negative", c.TTL))
	}
	if c.TombstoneTTL < 0 {
		errs = append(errs, fmt.Errorf("directory: TombstoneTTL: %s is negative", c.TombstoneTTL))
	}
	if c.PurgeInterval < 0 {
		errs = append(errs, fmt.Errorf("directory: PurgeInterval: %s is negative", c.PurgeInterval))
	}
	if c.EventHistory < 0 {
		errs = append(errs, fmt.Errorf("directory: EventHistory: %d is negative", c.EventHistory))
	}
	if c.SubscriberBuffer < 0 {
		errs = append(errs, fmt.Errorf("directory: SubscriberBuffer: %d is negative", c.SubscriberBuffer))
	}
	if c.MaxThingsPerPublisher < 0 {
		errs = append(errs, fmt.Errorf("directory: MaxThingsPerPublisher: %d is negative", c.MaxThingsPerPublisher))
	}
	if c.MaxBytesPerPublisher < 0 {
		errs = append(errs, fmt.Errorf("directory: MaxBytesPerPublisher: %d is negative", c.MaxBytesPerPublisher))
	}
	if c.MaxLearnedBytes < 0 {
		errs = append(errs, fmt.Errorf("directory: MaxLearnedBytes: %d is negative", c.MaxLearnedBytes))
	}
	if c.OfflineAfter < 0 {
		errs = append(errs, fmt.Errorf("directory: OfflineAfter: %s is negative", c.OfflineAfter))
	}
	if c.OfflineTTL < 0 {
		errs = append(errs, fmt.Errorf("directory: OfflineTTL: %s is negative", c.OfflineTTL))
	}
	return errors.Join(errs...)
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sends the directory's logs to log. Default: discarded; a nil
// log is ignored.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithClock replaces time.Now as the directory's clock, which dates
// registrations and expiries (tests). A nil clock is ignored.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}
