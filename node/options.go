package node

import (
	"errors"
	"log/slog"
)

// Option configures what a serialisable Config cannot hold. Options check
// their argument and make New fail with a clear message.
type Option func(*options) error

type options struct {
	logger      *slog.Logger
	libp2pLevel slog.Leveler
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
