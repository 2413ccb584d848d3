package fanout

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	// DefaultMaxEventSize bounds one event on a topic. Events are
	// notifications, not bulk transfers; 64 KiB leaves room for a rich
	// payload while keeping what every mesh peer relays small.
	DefaultMaxEventSize = 64 << 10
	// DefaultMaxAge is how old an event may be when it reaches a node:
	// generous for slow relays, short enough that old events cannot be
	// replayed into the network later.
	DefaultMaxAge = 5 * time.Minute
	// DefaultMaxSkew is how far in the future an event's timestamp may be,
	// for clocks that disagree.
	DefaultMaxSkew = 30 * time.Second
	// DefaultBuffer is how many events wait for a local subscriber that
	// has not read them yet before it is dropped (as interact's
	// DefaultQueueSize).
	DefaultBuffer = 64
	// DefaultRetry is how long the publisher waits before subscribing
	// again to a Thing whose event feed ended.
	DefaultRetry = 2 * time.Second
	// DefaultProbe is how long a subscription served from a topic also
	// asks the owner directly whether the subscription fails there (see
	// Invoker): long enough for an owner whose backend answers at once,
	// short enough that the owner holds one stream per subscriber only
	// briefly.
	DefaultProbe = 2 * time.Second
	// FeedWarnEvery is how often the publisher logs again that an own
	// Thing's event feed keeps ending the same way; the repeats between
	// are logged at debug level and counted in the next warning.
	FeedWarnEvery = time.Hour
)

// Config configures a Fanout. The zero value of every field selects its
// default.
type Config struct {
	// MaxEventSize bounds the data of one gossipsub message in bytes.
	// Default DefaultMaxEventSize. Every node of a federation should use
	// the same value: a node rejects what is larger than its own.
	MaxEventSize int `json:"maxEventSize,omitempty"`
	// MaxAge is the freshness window of an event. Default DefaultMaxAge.
	MaxAge time.Duration `json:"maxAge,omitempty"`
	// MaxSkew is the tolerated clock skew. Default DefaultMaxSkew.
	MaxSkew time.Duration `json:"maxSkew,omitempty"`
	// Buffer is the capacity of a local subscriber's queue. Default
	// DefaultBuffer.
	Buffer int `json:"buffer,omitempty"`
	// Retry is the pause before re-subscribing to an own Thing's events
	// after its feed ended; it grows, with jitter (node/backoff), up to a
	// minute while the feeds publish nothing. Default DefaultRetry.
	Retry time.Duration `json:"retry,omitempty"`
	// Probe bounds the direct question to the owner that the Invoker
	// adapter asks alongside each topic subscription, so that a
	// subscriber learns the owner's error (a backend answering 404, an
	// event the owner refuses) instead of waiting on a silent topic.
	// Default DefaultProbe; negative: no probe.
	Probe time.Duration `json:"probe,omitempty"`
}

func (c Config) withDefaults() Config {
	if c.MaxEventSize == 0 {
		c.MaxEventSize = DefaultMaxEventSize
	}
	if c.MaxAge == 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = DefaultMaxSkew
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Retry == 0 {
		c.Retry = DefaultRetry
	}
	if c.Probe == 0 {
		c.Probe = DefaultProbe
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.MaxEventSize < 0 {
		errs = append(errs, fmt.Errorf("fanout: maxEventSize: %d is negative", c.MaxEventSize))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("fanout: maxAge: %s is negative", c.MaxAge))
	}
	if c.MaxSkew < 0 {
		errs = append(errs, fmt.Errorf("fanout: maxSkew: %s is negative", c.MaxSkew))
	}
	if c.Buffer < 0 {
		errs = append(errs, fmt.Errorf("fanout: buffer: %d is negative", c.Buffer))
	}
	if c.Retry < 0 {
		errs = append(errs, fmt.Errorf("fanout: retry: %s is negative", c.Retry))
	}
	return errors.Join(errs...)
}

// Option sets what Config cannot hold.
type Option func(*options) error

type options struct {
	log *slog.Logger
	now func() time.Time
}

// WithLogger sends the Fanout's logs to l.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("fanout: WithLogger: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("fanout: WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}
