package node

import "github.com/libp2p/go-libp2p/core/network"

// WithReachability forces AutoNAT's verdict, for tests of relays on
// loopback, where AutoNAT never finds a public address.
func WithReachability(r network.Reachability) Option {
	return func(o *options) error {
		o.reachability = r
		return nil
	}
}
