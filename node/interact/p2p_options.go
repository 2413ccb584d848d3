package interact

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/lmosnode/lmosnode/proto"
)

// Defaults of TransportConfig.
const (
	// DefaultFirstFrameTimeout bounds how long a server waits for the
	// request after a stream opens: a peer that opens streams and sends
	// nothing must not pin them.
	DefaultFirstFrameTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds the write of one frame. A consumer that
	// reads nothing for this long (its flow-control window full) is dropped:
	// the stream is reset and the interaction ends (cancelled).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultDialTimeout bounds opening a stream to the owner (dial,
	// protocol negotiation, writing the request).
	DefaultDialTimeout = 15 * time.Second
	// DefaultCloseGrace is how long a server that has sent its last frame
	// waits for the consumer to close its side before it resets the stream.
	DefaultCloseGrace = 5 * time.Second
	// DefaultIdleTimeout is how long a Client keeps a session stream
	// (proto.ProtocolInteractSession) idle for the next interaction with
	// the same owner before it closes it.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxIdleStreams is how many idle session streams a Client
	// keeps per owner node.
	DefaultMaxIdleStreams = 64
	// SessionIdleTimeout is how long a Server waits for the next request
	// on a session stream before it closes the stream (cleanly: the
	// consumer, if it wrote a request meanwhile, sends it again on a new
	// stream). A Client's IdleTimeout is at most half of it, so that the
	// consumer, not the owner, lets idle streams go.
	SessionIdleTimeout = 2 * time.Minute
	// DefaultMaxPeerInteractions is how many interactions one remote peer
	// may have in flight on a Server (requests read and not yet ended,
	// subscriptions and observations included); the next one is refused
	// with a 429 error message until one ends. It is the node's libp2p
	// limit of inbound streams per peer for the two interact protocols
	// together (512 each, node/p2p), so a consumer node within those
	// limits never reaches it: it bounds what one peer can leave running
	// on an owner whose host lets it open more streams.
	DefaultMaxPeerInteractions = 1024
)

// ServerDeps are what a Server works with; both are required.
type ServerDeps struct {
	// Host is the libp2p host the Server serves streams on.
	Host host.Host
	// Invoker serves the requests: the node's Engine, or its router.
	Invoker Invoker
}

// ClientDeps are what a Client works with; Host is required.
type ClientDeps struct {
	// Host is the libp2p host the Client opens streams from.
	Host host.Host
	// Routing, if set, is asked for an owner's current addresses when
	// dialling it with the addresses the host knows fails (it may know
	// none yet: the Thing came by gossip from a node behind NAT; or stale
	// ones: the relay the owner was reached through went away,
	// docs/nat.md); the stream is then opened once more. Optional.
	Routing routing.PeerRouting
	// Asked, if set, is told of each owner a stream was opened to, so
	// that the host keeps its connection (p2p.KeepAsked). Optional.
	Asked func(peer.ID)
}

// TransportConfig configures the libp2p Server and Client. The zero value
// of every field selects its default.
type TransportConfig struct {
	// MaxMessageSize is the largest frame read or written. Default
	// proto.MaxMessageSize.
	MaxMessageSize int
	// FirstFrameTimeout: see DefaultFirstFrameTimeout.
	FirstFrameTimeout time.Duration
	// WriteTimeout: see DefaultWriteTimeout.
	WriteTimeout time.Duration
	// DialTimeout: see DefaultDialTimeout.
	DialTimeout time.Duration
	// CloseGrace: see DefaultCloseGrace.
	CloseGrace time.Duration
	// QueueSize is the capacity of a Client session's reply queue; when it
	// is full the Client stops reading the stream, and libp2p flow control
	// holds the owner back. Default DefaultQueueSize.
	QueueSize int
	// IdleTimeout: see DefaultIdleTimeout; at most SessionIdleTimeout/2.
	IdleTimeout time.Duration
	// MaxIdleStreams: see DefaultMaxIdleStreams; -1 keeps none (every
	// interaction opens a stream of its own).
	MaxIdleStreams int
	// MaxPeerInteractions: see DefaultMaxPeerInteractions (the Server's);
	// -1 sets no limit.
	MaxPeerInteractions int
}

func (c TransportConfig) withDefaults() TransportConfig {
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = proto.MaxMessageSize
	}
	if c.FirstFrameTimeout == 0 {
		c.FirstFrameTimeout = DefaultFirstFrameTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.CloseGrace == 0 {
		c.CloseGrace = DefaultCloseGrace
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxPeerInteractions == 0 {
		c.MaxPeerInteractions = DefaultMaxPeerInteractions
	}
	switch c.MaxIdleStreams {
	case 0:
		c.MaxIdleStreams = DefaultMaxIdleStreams
	case -1:
		c.MaxIdleStreams = 0
	}
	return c
}

// Validate reports every field out of range.
func (c TransportConfig) Validate() error {
	var errs []error
	if c.MaxMessageSize < 0 || c.MaxMessageSize > proto.MaxMessageSize {
		errs = append(errs, fmt.Errorf("interact: TransportConfig.MaxMessageSize: %d is not within 0..%d", c.MaxMessageSize, proto.MaxMessageSize))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"FirstFrameTimeout", c.FirstFrameTimeout}, {"WriteTimeout", c.WriteTimeout},
		{"DialTimeout", c.DialTimeout}, {"CloseGrace", c.CloseGrace}, {"IdleTimeout", c.IdleTimeout},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("interact: TransportConfig.%s: %s is negative", d.name, d.v))
		}
	}
	if c.IdleTimeout > SessionIdleTimeout/2 {
		errs = append(errs, fmt.Errorf("interact: TransportConfig.IdleTimeout: %s is above %s", c.IdleTimeout, SessionIdleTimeout/2))
	}
	if c.MaxIdleStreams < -1 {
		errs = append(errs, fmt.Errorf("interact: TransportConfig.MaxIdleStreams: %d is below -1", c.MaxIdleStreams))
	}
	if c.MaxPeerInteractions < -1 {
		errs = append(errs, fmt.Errorf("interact: TransportConfig.MaxPeerInteractions: %d is below -1", c.MaxPeerInteractions))
	}
	if c.QueueSize < 0 {
		errs = append(errs, fmt.Errorf("interact: TransportConfig.QueueSize: %d is negative", c.QueueSize))
	}
	return errors.Join(errs...)
}
