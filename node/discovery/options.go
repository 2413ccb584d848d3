package discovery

import (
	"errors"
	"log/slog"

	"github.com/libp2p/go-libp2p/core/routing"
)

// Option configures what a Config cannot hold. Options check their argument
// and make New fail with a clear message.
type Option func(*options) error

type options struct {
	logger  *slog.Logger
	routing routing.ContentRouting
}

func defaultOptions() options {
	return options{logger: slog.New(slog.DiscardHandler)}
}

// WithLogger sets the service's logger. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("WithLogger: logger is nil")
		}
		o.logger = l
		return nil
	}
}

// WithRouting turns on DHT rendezvous: the service advertises and finds
// LMOS nodes through r (the node passes its *kaddht.IpfsDHT). Without it
// the service discovers by mDNS and bootstrap peers only.
func WithRouting(r routing.ContentRouting) Option {
	return func(o *options) error {
		if r == nil {
			return errors.New("WithRouting: routing is nil")
		}
		o.routing = r
		return nil
	}
}
