package discovery

import (
	"errors"
	"log/slog"
)

// Option configures what a Config cannot hold. Options check their argument
// and make New fail with a clear message.
type Option func(*options) error

type options struct {
	logger *slog.Logger
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
