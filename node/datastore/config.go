package datastore

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/libp2p/go-libp2p/core/peer"
)

// DefaultCacheMB is the default of Config.CacheMB: pebble's own default;
// the directory of Things and groups is small and mostly read from memory
// structures above the datastore.
const DefaultCacheMB = 8

// Deps are what the Store works with.
type Deps struct {
	// Self is the node's peer ID, the publisher of its own Things, whose
	// writes are durable (see the package documentation). Required.
	Self peer.ID
}

// Config configures the Store. The zero value of every optional field
// selects its default.
type Config struct {
	// Dir is the directory of the pebble database, created if missing.
	// Required.
	Dir string `json:"dir"`
	// CacheMB is pebble's block cache size in MiB (DefaultCacheMB if 0).
	CacheMB int `json:"cacheMB"`
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("datastore: Dir is empty"))
	}
	if c.CacheMB < 0 {
		errs = append(errs, fmt.Errorf("datastore: CacheMB %d is negative", c.CacheMB))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with every zero optional field set to its
// default.
func (c Config) withDefaults() Config {
	if c.CacheMB == 0 {
		c.CacheMB = DefaultCacheMB
	}
	return c
}

// Option sets what Config cannot hold.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger sends the Store's logs (pebble's, slow disk operations) to
// log; without it they are discarded.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}
