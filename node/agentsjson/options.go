package agentsjson

import (
	"log/slog"
	"net/http"
)

// Option sets what a Config cannot hold.
type Option func(*options)

type options struct {
	log    *slog.Logger
	client *http.Client
}

// WithLogger sends the package's logs to log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// WithHTTPClient makes a Client fetch documents and call APIs with c
// (default: a client of its own, ClientConfig's timeout, no redirect to
// another host).
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

func applyOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
