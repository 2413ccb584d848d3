package wsgateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/interact"
)

// Defaults of Config.
const (
	// DefaultQueueSize is how many encoded frames wait for one socket's
	// writer. 256 absorbs the bursts of many concurrent interactions (and of
	// token-streaming agents) while bounding what one slow reader pins
	// (256 × proto.MaxMessageSize at worst, a few hundred KiB in practice).
	DefaultQueueSize = 256
	// DefaultWriteTimeout bounds the write of one frame. A peer that reads
	// nothing for this long is disconnected, which cancels everything it
	// had open: a dead or stuck reader must not pin sessions forever.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultInputQueueSize is how many follow-up messages (streamInput,
	// cancelAction, …) of one interaction wait for the Thing before the
	// socket's reader waits too.
	DefaultInputQueueSize = 16
	// DefaultPingInterval is how often a socket is pinged. Idle
	// connections through NATs and proxies are commonly cut after a few
	// minutes; 30 s keeps them alive and notices a vanished peer within
	// PingInterval + WriteTimeout.
	DefaultPingInterval = 30 * time.Second
)

// CallerFunc names the peer behind a socket: on a consumer socket the
// Invoker sees it via interact.WithCaller, so that only the same caller
// queries, cancels or streams into what it opened; on an agent socket the
// Registrar sees it (interact.CallerFrom on Register's ctx) and may decide
// who may register which Thing. A node with authentication returns the
// authenticated identity. It must be safe for concurrent use.
type CallerFunc func(r *http.Request) string

// newCaller is the default CallerFunc: a fresh "ws:<uuid>" per connection
// (every socket is its own caller).
func newCaller(*http.Request) string { return "ws:" + uuid.NewString() }

// GatewayDeps are what a Gateway works with. Invoker is required.
type GatewayDeps struct {
	// Invoker opens the interactions: the node's router.
	Invoker interact.Invoker
	// Caller names the consumer behind a socket; see CallerFunc. Nil:
	// every socket is its own caller ("ws:<uuid>").
	Caller CallerFunc
}

// AgentDeps are what an AgentGateway works with. Registrar is required.
type AgentDeps struct {
	// Registrar publishes and withdraws the Things agents register.
	Registrar Registrar
	// Caller names the agent behind a socket; see CallerFunc. Nil: every
	// socket is its own caller ("ws:<uuid>").
	Caller CallerFunc
}

// Config configures a Gateway or an AgentGateway. The zero value of every
// field selects its default.
type Config struct {
	// QueueSize is the capacity of a socket's write queue, in frames.
	// Default DefaultQueueSize.
	QueueSize int
	// WriteTimeout bounds the write of one frame. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// InputQueueSize bounds the follow-up messages queued per interaction.
	// Default DefaultInputQueueSize.
	InputQueueSize int
	// PingInterval is how often the node pings a socket; a peer that does
	// not answer within WriteTimeout is disconnected. Negative disables
	// pings. Default DefaultPingInterval.
	PingInterval time.Duration
	// OriginPatterns lists the host patterns of browser origins allowed
	// besides the request's own host (see github.com/coder/websocket
	// AcceptOptions.OriginPatterns). Clients that send no Origin header
	// (agents, programs) are always allowed.
	OriginPatterns []string
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.QueueSize < 0 {
		errs = append(errs, fmt.Errorf("wsgateway: Config.QueueSize: %d is negative", c.QueueSize))
	}
	if c.InputQueueSize < 0 {
		errs = append(errs, fmt.Errorf("wsgateway: Config.InputQueueSize: %d is negative", c.InputQueueSize))
	}
	if c.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("wsgateway: Config.WriteTimeout: %s is negative", c.WriteTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.InputQueueSize == 0 {
		c.InputQueueSize = DefaultInputQueueSize
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	return c
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger sends the gateway's logs to log. Default: discarded.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
