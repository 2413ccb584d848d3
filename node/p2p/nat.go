package p2p

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/config"
)

// Nodes behind NAT (docs/nat.md): which addresses the node announces
// (Config.Announce, Config.NoAnnounce), where AutoRelay looks for relays
// (Config.Relays, then connected relays), and what the node knows of its
// own reachability for GET /api/v1/node.

// Reachability values of NodeInfo.Reachability.
const (
	// ReachabilityPublic: AutoNAT found the node reachable from outside
	// (other nodes dialled one of its addresses back).
	ReachabilityPublic = "public"
	// ReachabilityPrivate: AutoNAT found the node unreachable from outside
	// (behind NAT or a firewall); others reach it through its relays.
	ReachabilityPrivate = "private"
	// ReachabilityUnknown: no verdict yet, or AutoNAT is off.
	ReachabilityUnknown = "unknown"
)

// relayHopProtocol is the circuit relay v2 protocol a relay serves.
const relayHopProtocol = protocol.ID("/libp2p/circuit/relay/0.2.0/hop")

// addrsFactory returns the host's AddrsFactory for cfg: the addresses the
// host found, plus cfg.Announce, minus cfg.NoAnnounce. Both lists are
// validated.
func addrsFactory(cfg config.Config) (func([]ma.Multiaddr) []ma.Multiaddr, error) {
	announce := make([]ma.Multiaddr, 0, len(cfg.Announce))
	for i, s := range cfg.Announce {
		m, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("announce[%d]: %q: %w", i, s, err)
		}
		announce = append(announce, m)
	}
	filters := make([]config.AddrFilter, 0, len(cfg.NoAnnounce))
	for i, s := range cfg.NoAnnounce {
		f, err := config.ParseAddrFilter(s)
		if err != nil {
			return nil, fmt.Errorf("noAnnounce[%d]: %q: %w", i, s, err)
		}
		filters = append(filters, f)
	}
	return func(found []ma.Multiaddr) []ma.Multiaddr {
		out := make([]ma.Multiaddr, 0, len(found)+len(announce))
		out = append(out, found...)
		for _, a := range announce {
			if !slices.ContainsFunc(out, a.Equal) {
				out = append(out, a)
			}
		}
		return slices.DeleteFunc(out, func(a ma.Multiaddr) bool {
			return slices.ContainsFunc(filters, func(f config.AddrFilter) bool { return f.Matches(a) })
		})
	}, nil
}

// isRelayed reports whether a goes through a relay (contains /p2p-circuit).
func isRelayed(a ma.Multiaddr) bool {
	return slices.ContainsFunc(a, func(c ma.Component) bool { return c.Code() == ma.P_CIRCUIT })
}

// relaySource is AutoRelay's source of relay candidates: the configured
// relays first, then connected peers that serve circuit relay v2. The
// host is set once libp2p has built it; AutoRelay asks only later, when
// the node finds itself not publicly reachable.
type relaySource struct {
	static []peer.AddrInfo
	host   atomic.Pointer[host.Host]
}

// newRelaySource parses cfg.Relays (validated).
func newRelaySource(cfg config.Config) (*relaySource, error) {
	src := &relaySource{}
	for i, s := range cfg.Relays {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			return nil, fmt.Errorf("relays[%d]: %q: %w", i, s, err)
		}
		src.static = append(src.static, *ai)
	}
	return src, nil
}

// peers sends at most num candidates and closes the channel.
func (s *relaySource) peers(ctx context.Context, num int) <-chan peer.AddrInfo {
	out := make(chan peer.AddrInfo, max(num, 0))
	defer close(out)
	sent := make(map[peer.ID]bool)
	send := func(ai peer.AddrInfo) bool {
		if len(sent) >= num || ctx.Err() != nil {
			return false
		}
		if !sent[ai.ID] {
			sent[ai.ID] = true
			out <- ai
		}
		return true
	}
	for _, ai := range s.static {
		if !send(ai) {
			return out
		}
	}
	hp := s.host.Load()
	if hp == nil {
		return out
	}
	h := *hp
	for _, p := range h.Network().Peers() {
		if ok, err := h.Peerstore().SupportsProtocols(p, relayHopProtocol); err != nil || len(ok) == 0 {
			continue
		}
		if !send(peer.AddrInfo{ID: p, Addrs: h.Peerstore().Addrs(p)}) {
			return out
		}
	}
	return out
}

// NAT is what the host's event bus says of the node's reachability:
// AutoNAT's verdict and the addresses AutoNAT v2 confirmed reachable or
// unreachable.
type NAT struct {
	mu          sync.Mutex
	verdict     network.Reachability
	reachable   int
	unreachable int
}

// FollowNAT keeps st up to date from h's event bus until ctx ends. Both
// events are stateful: a late subscriber gets the last one first.
func FollowNAT(ctx context.Context, h host.Host, st *NAT, wg *sync.WaitGroup) error {
	sub, err := h.EventBus().Subscribe([]any{
		new(event.EvtLocalReachabilityChanged),
		new(event.EvtHostReachableAddrsChanged),
	})
	if err != nil {
		return fmt.Errorf("reachability: %w", err)
	}
	wg.Go(func() {
		defer func() { _ = sub.Close() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				st.mu.Lock()
				switch e := e.(type) {
				case event.EvtLocalReachabilityChanged:
					st.verdict = e.Reachability
				case event.EvtHostReachableAddrsChanged:
					st.reachable, st.unreachable = len(e.Reachable), len(e.Unreachable)
				}
				st.mu.Unlock()
			}
		}
	})
	return nil
}

// Reachability sums up st: public when AutoNAT (v1) says so or AutoNAT v2
// confirmed an address reachable; private when AutoNAT says so or v2
// found addresses unreachable and none reachable; unknown otherwise.
func (st *NAT) Reachability() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.verdict == network.ReachabilityPublic, st.reachable > 0:
		return ReachabilityPublic
	case st.verdict == network.ReachabilityPrivate, st.unreachable > 0:
		return ReachabilityPrivate
	}
	return ReachabilityUnknown
}

// RelayInfo splits the node's announced addresses into its relayed ones
// and the relays they go through (the peers it holds a reservation with).
func RelayInfo(addrs []ma.Multiaddr) (relayed []string, relays []string) {
	for _, a := range addrs {
		if !isRelayed(a) {
			continue
		}
		relayed = append(relayed, a.String())
		if id, err := relayPeer(a); err == nil && !slices.Contains(relays, id.String()) {
			relays = append(relays, id.String())
		}
	}
	return relayed, relays
}

// relayPeer returns the relay's peer ID of a relayed address
// (…/p2p/<relay>/p2p-circuit…).
func relayPeer(a ma.Multiaddr) (peer.ID, error) {
	var relay peer.ID
	for _, c := range a {
		switch c.Code() {
		case ma.P_P2P:
			id, err := peer.Decode(c.Value())
			if err != nil {
				return "", err
			}
			relay = id
		case ma.P_CIRCUIT:
			if relay == "" {
				return "", errors.New("no relay peer before /p2p-circuit")
			}
			return relay, nil
		}
	}
	return "", errors.New("not a relayed address")
}
