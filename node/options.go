package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/network"
	"go.opentelemetry.io/otel/trace"

	"github.com/lmosnode/lmosnode/node/did"
)

// Option configures what a serialisable Config cannot hold. Options check
// their argument and make New fail with a clear message.
type Option func(*options) error

type options struct {
	logger      *slog.Logger
	libp2pLevel slog.Leveler

	// heartbeat overrides gossipsub's heartbeat interval when positive.
	heartbeat time.Duration
	// tracers observe the node's gossipsub router.
	tracers []pubsub.RawTracer
	// tracing, if set, is the node's tracer provider.
	tracing trace.TracerProvider
	// access, if set, replaces the group service as the node's
	// groupAccess (tests).
	access groupAccess
	// gater, if set, decides which connections the host makes and takes.
	gater connmgr.ConnectionGater
	// reachability, unless unknown, is forced on AutoNAT (tests on
	// loopback, where AutoNAT never finds a public address).
	reachability network.Reachability
	// didOpts, if set, configures the resolver of organisation DIDs
	// (WithDIDResolver).
	didOpts *did.Options
}

func defaultOptions() options {
	return options{
		logger: slog.New(slog.DiscardHandler),
		// go-libp2p logs routine network churn (failed dials, resets) at
		// info and debug; a node's operator wants its warnings and errors.
		libp2pLevel: slog.LevelWarn,
	}
}

// WithLogger sets the logger of the node and of the libraries it embeds
// (go-libp2p, kad-dht, pebble). The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("WithLogger: logger is nil")
		}
		o.logger = l
		return nil
	}
}

// WithLibp2pLogLevel sets the least severe level at which records from
// go-libp2p and the libraries built on it reach the node's logger (default
// slog.LevelWarn). The node's handler may filter further.
func WithLibp2pLogLevel(level slog.Leveler) Option {
	return func(o *options) error {
		if level == nil {
			return errors.New("WithLibp2pLogLevel: level is nil")
		}
		o.libp2pLevel = level
		return nil
	}
}

// WithGossipHeartbeat sets the gossipsub heartbeat interval (default
// gossipsub's, 1 s): how often meshes are repaired and gossip about recent
// messages is sent. Multi-node tests shorten it so that meshes form quickly;
// a production node has no reason to change it.
func WithGossipHeartbeat(d time.Duration) Option {
	return func(o *options) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("WithGossipHeartbeat: %s: must be at least 10ms", d)
		}
		o.heartbeat = d
		return nil
	}
}

// WithPubSubTracer adds a tracer that gossipsub reports its events to
// (messages delivered, rejected with a reason, duplicates, grafts,
// prunes). The tracer's methods are called from gossipsub's event loop and
// must not block. It has no effect without Config.Gossip.
func WithPubSubTracer(t pubsub.RawTracer) Option {
	return func(o *options) error {
		if t == nil {
			return errors.New("WithPubSubTracer: tracer is nil")
		}
		o.tracers = append(o.tracers, t)
		return nil
	}
}

// WithTracerProvider makes the node trace its API requests and
// interactions with tp (OpenTelemetry). Without it the node traces only
// when the OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) environment
// variable is set, exporting over OTLP/HTTP (docs/operations.md#tracing).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) error {
		if tp == nil {
			return errors.New("WithTracerProvider: provider is nil")
		}
		o.tracing = tp
		return nil
	}
}

// WithConnectionGater makes the host ask g before every connection it
// dials or accepts, e.g. to keep a multi-node test to a given topology
// (the DHT otherwise connects every node it hears of).
func WithConnectionGater(g connmgr.ConnectionGater) Option {
	return func(o *options) error {
		if g == nil {
			return errors.New("WithConnectionGater: gater is nil")
		}
		o.gater = g
		return nil
	}
}
