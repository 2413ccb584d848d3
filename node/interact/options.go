package interact

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// Defaults of EngineConfig.
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

// EngineDeps are what an Engine works with. Things is required.
type EngineDeps struct {
	// Things finds the TDs of the node's own Things.
	Things Things
	// Authorize, if set, is asked before every interaction with a Thing
	// whose TD names lmos:groups, and again for the running ones by
	// Engine.Reauthorize; see AuthorizeFunc. Nil allows every caller.
	Authorize AuthorizeFunc
}

// EngineConfig configures an Engine. The zero value of every field
// selects its default.
type EngineConfig struct {
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
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.InputQueueSize == 0 {
		c.InputQueueSize = DefaultInputQueueSize
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ActionTimeout == 0 {
		c.ActionTimeout = DefaultActionTimeout
	}
	if c.ActionRetention == 0 {
		c.ActionRetention = DefaultActionRetention
	}
	if c.MaxRetainedActions == 0 {
		c.MaxRetainedActions = DefaultMaxRetainedActions
	}
	if c.SchemaCacheSize == 0 {
		c.SchemaCacheSize = DefaultSchemaCacheSize
	}
	return c
}

// Validate reports every field out of range.
func (c EngineConfig) Validate() error {
	var errs []error
	neg := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("interact: EngineConfig.%s: %d is negative", name, v))
		}
	}
	neg("QueueSize", c.QueueSize)
	neg("InputQueueSize", c.InputQueueSize)
	neg("MaxRetainedActions", c.MaxRetainedActions)
	neg("SchemaCacheSize", c.SchemaCacheSize)
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("interact: EngineConfig.RequestTimeout: %s is negative", c.RequestTimeout))
	}
	if c.ActionRetention < 0 {
		errs = append(errs, fmt.Errorf("interact: EngineConfig.ActionRetention: %s is negative", c.ActionRetention))
	}
	return errors.Join(errs...)
}

// Option sets what a Config cannot hold. One Option type serves every
// constructor of the package; each option says which constructors use it,
// and the others ignore it.
type Option func(*options)

type options struct {
	log    *slog.Logger
	now    func() time.Time
	codec  proto.Codec
	client *http.Client
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler), now: time.Now, codec: proto.JSON}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithLogger sends the logs of an Engine, Server, Client or HTTPBackend to
// log. Default: discarded.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithClock replaces time.Now as an Engine's clock (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithCodec sets what a Client writes: proto.JSON or proto.CBOR. A Server
// answers in the codec of the request. Default proto.JSON: the spec's own
// form, and faster than CBOR with proto's codecs (whose CBOR path converts
// through a tree; see BenchmarkRequestReply). Every node understands both.
func WithCodec(c proto.Codec) Option {
	return func(o *options) {
		if c != nil {
			o.codec = c
		}
	}
}

// WithHTTPClient sets the client an HTTPBackend makes its requests with.
// It must not have a Timeout (event streams and sessions are long); the
// engine bounds each interaction. Default: a client of its own with
// keep-alive connections.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}
