package interact

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Options.
const (
	// DefaultQueueSize is how many replies a session holds for a consumer
	// that has not read them yet. 64 covers the bursts of a token-streaming
	// agent while bounding what one slow consumer pins in memory (64 ×
	// proto.MaxMessageSize in the worst case, a few KiB in practice).
	DefaultQueueSize = 64
	// DefaultInputQueueSize is how many streamInput chunks wait for a
	// Thing that has not read them yet before Send blocks.
	DefaultInputQueueSize = 16
	// DefaultRequestTimeout bounds reads, writes and the wait of a
	// cancelAction: a property is a value, not a job; a backend that takes
	// longer is broken.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultActionTimeout bounds one invocation or streaming session, so
	// that an abandoned action cannot hold resources forever. Ten minutes
	// leaves room for slow LLM agents; Things with longer jobs set their own.
	DefaultActionTimeout = 10 * time.Minute
	// DefaultActionRetention is how long a finished invocation can still be
	// queried (queryAction), e.g. by a consumer whose stream broke just
	// before the final status.
	DefaultActionRetention = 5 * time.Minute
	// DefaultMaxRetainedActions bounds the finished invocations kept for
	// queryAction; the oldest go first.
	DefaultMaxRetainedActions = 4096
	// DefaultSchemaCacheSize bounds the compiled data schemas kept.
	DefaultSchemaCacheSize = 1024
)

// Options configure an Engine. The zero value of every field selects its
// default.
type Options struct {
	// QueueSize is the capacity of a session's reply queue. Default
	// DefaultQueueSize.
	QueueSize int
	// InputQueueSize is the capacity of a streaming session's input queue.
	// Default DefaultInputQueueSize.
	InputQueueSize int
	// RequestTimeout bounds readProperty, writeProperty,
	// writeMultipleProperties and the wait of a standalone cancelAction.
	// Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// ActionTimeout bounds an invocation or streaming session; negative
	// means no bound. Default DefaultActionTimeout.
	ActionTimeout time.Duration
	// ActionRetention is how long a finished invocation answers
	// queryAction. Default DefaultActionRetention.
	ActionRetention time.Duration
	// MaxRetainedActions bounds the finished invocations kept. Default
	// DefaultMaxRetainedActions.
	MaxRetainedActions int
	// SchemaCacheSize bounds the compiled data schemas kept. Default
	// DefaultSchemaCacheSize.
	SchemaCacheSize int

	// Authorize, if set, is asked before every interaction with a Thing
	// whose TD names lmos:groups, and again for the running ones by
	// Engine.Reauthorize; see AuthorizeFunc. Nil allows every caller.
	Authorize AuthorizeFunc

	// Logger receives the engine's logs. Default: discarded.
	Logger *slog.Logger
	// Now is the clock, injected by tests. Default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.InputQueueSize == 0 {
		o.InputQueueSize = DefaultInputQueueSize
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.ActionTimeout == 0 {
		o.ActionTimeout = DefaultActionTimeout
	}
	if o.ActionRetention == 0 {
		o.ActionRetention = DefaultActionRetention
	}
	if o.MaxRetainedActions == 0 {
		o.MaxRetainedActions = DefaultMaxRetainedActions
	}
	if o.SchemaCacheSize == 0 {
		o.SchemaCacheSize = DefaultSchemaCacheSize
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
	neg := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("interact options: %s: %d is negative", name, v))
		}
	}
	neg("QueueSize", o.QueueSize)
	neg("InputQueueSize", o.InputQueueSize)
	neg("MaxRetainedActions", o.MaxRetainedActions)
	neg("SchemaCacheSize", o.SchemaCacheSize)
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("interact options: RequestTimeout: %s is negative", o.RequestTimeout))
	}
	if o.ActionRetention < 0 {
		errs = append(errs, fmt.Errorf("interact options: ActionRetention: %s is negative", o.ActionRetention))
	}
	return errors.Join(errs...)
}
