package discovery

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/backoff"
)

// RendezvousNamespace is the DHT rendezvous string every LMOS node
// advertises under and looks up (see the package doc for its content ID).
// Changing it splits the federation.
const RendezvousNamespace = "lmos/1/nodes"

// maxConcurrentDials bounds the dials discovery runs at once, so that a
// burst of finds (a large rendezvous answer, a busy LAN) does not use up
// file descriptors and the resource manager's outbound budget at once.
const maxConcurrentDials = 8

// findTimeout bounds one rendezvous lookup. kad-dht's own query timeout is
// a minute; a lookup that takes longer is not going to answer.
const findTimeout = time.Minute

// Config is the configuration of a Service. Start from DefaultConfig; the
// node fills it from its own (serialised) configuration.
type Config struct {
	// MDNS turns on discovery on the local network by mDNS.
	MDNS bool
	// Bootstrap are the peers dialled at Start, and again whenever the host
	// has no peer. Each needs an ID and at least one address.
	Bootstrap []peer.AddrInfo
	// MaxPeers is the number of connected peers at which discovery stops
	// dialling (mDNS and rendezvous finds; bootstrap dials happen only with
	// no peer at all). Set it to the connection manager's low water mark,
	// not its high one: the manager trims down to the low mark, and
	// dialling up to the high one would make discovery and trimming undo
	// each other's work.
	MaxPeers int
	// DialTimeout bounds each dial discovery makes.
	DialTimeout time.Duration
	// DialBackoff is the delay before discovery dials a peer again after a
	// failed dial; it grows with each failure, up to Max.
	DialBackoff Backoff
	// FindBackoff is the interval between rendezvous lookups: Min after a
	// lookup that found new peers, growing up to Max while lookups find
	// none.
	FindBackoff Backoff
	// AdvertiseBackoff is the delay before advertising again after a
	// failed advertisement (for instance while the DHT routing table is
	// still empty); it grows with each failure, up to Max.
	AdvertiseBackoff Backoff
	// BootstrapBackoff is the delay between bootstrap attempts while the
	// host has no peer; it grows with each failed attempt, up to Max. Min
	// is also how often the service checks that the host still has peers.
	BootstrapBackoff Backoff
}

// Backoff is a delay that starts at Min and grows, with jitter, up to Max
// (the node's backoff: exponential, base 2, ±50 % jitter, clamped to
// [Min, Max]).
type Backoff struct {
	Min time.Duration
	Max time.Duration
}

// start returns a fresh sequence of b's delays.
func (b Backoff) start() *backoff.Backoff {
	return backoff.New(b.Min, b.Max)
}

// DefaultConfig returns the configuration of a node on a LAN that also
// joins a federation through the DHT.
func DefaultConfig() Config {
	return Config{
		// Two nodes on one LAN must find each other with no configuration.
		MDNS: true,
		// No bootstrap peers are built in: an organisation chooses which
		// federation it joins.
		Bootstrap: nil,
		// The node's default connection manager low water mark.
		MaxPeers: 64,
		// Long enough for a TCP or QUIC handshake plus the security and
		// muxer negotiation across continents; a peer slower than that is
		// not one to keep.
		DialTimeout: 15 * time.Second,
		// go-libp2p's swarm backs off a failed address for 5 s first; do
		// not retry earlier than that, and give up on a dead peer for
		// long stretches (it may come back: mDNS and the DHT will say so).
		DialBackoff: Backoff{Min: 5 * time.Second, Max: 10 * time.Minute},
		// A new node looks often while its neighbourhood is still growing
		// and settles to a lookup every ten minutes on a stable network.
		FindBackoff: Backoff{Min: 10 * time.Second, Max: 10 * time.Minute},
		// Advertising fails until the DHT has peers; retry soon at first,
		// and no more than every five minutes on a node that stays alone.
		AdvertiseBackoff: Backoff{Min: 5 * time.Second, Max: 5 * time.Minute},
		// A node that lost every peer should come back quickly, but must
		// not hammer bootstrap peers that are down for maintenance.
		BootstrapBackoff: Backoff{Min: 2 * time.Second, Max: 2 * time.Minute},
	}
}

// Validate reports every field out of range, each in an error that names
// it, e.g. `discovery config: bootstrap[1]: peer 12D3…: no address`.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("discovery config: "+format, args...))
	}
	for i, ai := range c.Bootstrap {
		if err := ai.ID.Validate(); err != nil {
			bad("bootstrap[%d]: peer ID: %w", i, err)
		} else if len(ai.Addrs) == 0 {
			bad("bootstrap[%d]: peer %s: no address", i, ai.ID)
		}
	}
	if c.MaxPeers <= 0 {
		bad("maxPeers: %d: must be positive", c.MaxPeers)
	}
	if c.DialTimeout <= 0 {
		bad("dialTimeout: %s: must be positive", c.DialTimeout)
	}
	for _, b := range []struct {
		name string
		b    Backoff
	}{
		{"dialBackoff", c.DialBackoff},
		{"findBackoff", c.FindBackoff},
		{"advertiseBackoff", c.AdvertiseBackoff},
		{"bootstrapBackoff", c.BootstrapBackoff},
	} {
		if err := b.b.validate(); err != nil {
			bad("%s: %w", b.name, err)
		}
	}
	return errors.Join(errs...)
}

func (b Backoff) validate() error {
	if b.Min <= 0 {
		return fmt.Errorf("min: %s: must be positive", b.Min)
	}
	if b.Max < b.Min {
		return fmt.Errorf("max: %s: must not be less than min (%s)", b.Max, b.Min)
	}
	return nil
}
