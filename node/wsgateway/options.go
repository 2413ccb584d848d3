package wsgateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Defaults of Options.
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

// Options configure a Gateway or an AgentGateway. The zero value of every
// field selects its default.
type Options struct {
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
	// Caller names the peer behind a socket: on a consumer socket the
	// Invoker sees it via interact.WithCaller, so that only the same caller
	// queries, cancels or streams into what it opened; on an agent socket
	// the Registrar sees it (interact.CallerFrom on Register's ctx) and may
	// decide who may register which Thing. Default: a fresh "ws:<uuid>" per
	// connection (every socket is its own caller). A node with
	// authentication returns the authenticated identity instead.
	Caller func(r *http.Request) string
	// Logger receives the gateway's logs. Default: discarded.
	Logger *slog.Logger
}

// Validate reports every option out of range.
func (o Options) Validate() error {
	var errs []error
	if o.QueueSize < 0 {
		errs = append(errs, fmt.Errorf("wsgateway options: QueueSize: %d is negative", o.QueueSize))
	}
	if o.InputQueueSize < 0 {
		errs = append(errs, fmt.Errorf("wsgateway options: InputQueueSize: %d is negative", o.InputQueueSize))
	}
	if o.WriteTimeout < 0 {
		errs = append(errs, fmt.Errorf("wsgateway options: WriteTimeout: %s is negative", o.WriteTimeout))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.InputQueueSize == 0 {
		o.InputQueueSize = DefaultInputQueueSize
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.Caller == nil {
		o.Caller = func(*http.Request) string { return "ws:" + uuid.NewString() }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
