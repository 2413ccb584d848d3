package discovery

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/backoff"
)

// maxFailures bounds the per-peer backoff table; past it, entries whose
// delay has run out are forgotten.
const maxFailures = 1024

// failure is the dial backoff of one peer whose last dial failed.
type failure struct {
	next  time.Time // no dial by mDNS or rendezvous before this
	delay *backoff.Backoff
}

// tryDial dials ai in the background on behalf of src, unless ai is this
// host, is already connected (then src claims it, see claim), is being
// dialled by us, is backing off after a failed dial, or the host has
// MaxPeers peers. It reports whether it started a dial. Only the service's
// own goroutines call it (it adds to wg).
func (s *Service) tryDial(ai peer.AddrInfo, src Source) bool {
	p := ai.ID
	if p == "" || p == s.h.ID() || s.ctx.Err() != nil {
		return false
	}
	if s.h.Network().Connectedness(p) == network.Connected {
		s.claim(p, src)
		return false
	}
	if len(ai.Addrs) == 0 && len(s.h.Peerstore().Addrs(p)) == 0 {
		return false // nothing to dial; our host does no peer routing
	}

	s.mu.Lock()
	if _, ok := s.pending[p]; ok {
		s.mu.Unlock()
		return false
	}
	if f := s.failures[p]; f != nil && time.Now().Before(f.next) {
		s.mu.Unlock()
		return false
	}
	if len(s.h.Network().Peers())+s.inflight >= s.cfg.MaxPeers {
		s.mu.Unlock()
		s.log.Debug("peer limit reached; not dialling", "peer", p, "source", src, "maxPeers", s.cfg.MaxPeers)
		return false
	}
	s.pending[p] = src
	s.inflight++
	s.mu.Unlock()

	s.wg.Go(func() {
		defer s.endDial(p)
		select {
		case s.dialSlots <- struct{}{}:
			defer func() { <-s.dialSlots }()
		case <-s.ctx.Done():
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
		err := s.connect(ctx, ai, src)
		cancel()
		s.recordDial(p, err)
		if err != nil {
			s.log.Debug("dial failed", "peer", p, "source", src, "err", err)
			return
		}
		s.log.Info("peer connected", "peer", p, "source", src)
	})
	return true
}

// atLimit reports whether the host has MaxPeers peers, counting the dials
// of ours in flight.
func (s *Service) atLimit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h.Network().Peers())+s.inflight >= s.cfg.MaxPeers
}

// beginDial marks a dial of ours to p in flight, so that the connection it
// makes is recorded as src. It reports false if one already is.
func (s *Service) beginDial(p peer.ID, src Source) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[p]; ok {
		return false
	}
	s.pending[p] = src
	s.inflight++
	return true
}

// endDial ends what beginDial (or tryDial) began.
func (s *Service) endDial(p peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[p]; ok {
		delete(s.pending, p)
		s.inflight--
	}
}

// connect dials ai and, on success, records src as its source.
func (s *Service) connect(ctx context.Context, ai peer.AddrInfo, src Source) error {
	if err := s.h.Connect(ctx, ai); err != nil {
		return fmt.Errorf("discovery: dial %s peer %s: %w", src, ai.ID, err)
	}
	s.claim(ai.ID, src)
	return nil
}

// recordDial updates p's dial backoff after a dial that returned err.
func (s *Service) recordDial(p peer.ID, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.failures, p)
		return
	}
	now := time.Now()
	if len(s.failures) >= maxFailures {
		for id, f := range s.failures {
			if now.After(f.next) {
				delete(s.failures, id)
			}
		}
	}
	f := s.failures[p]
	if f == nil {
		f = &failure{delay: s.cfg.DialBackoff.start()}
		s.failures[p] = f
	}
	f.next = now.Add(f.delay.NextBackOff())
}

// forceDirect lets a dial to ai skip the swarm's per-address dial backoff
// (5 s and more after a failure), for dials our own backoff already paces
// or that the user asked for. go-libp2p's option also drops relayed
// addresses, so it is not used when ai has any.
func forceDirect(ctx context.Context, ai peer.AddrInfo, reason string) context.Context {
	for _, a := range ai.Addrs {
		if _, err := a.ValueForProtocol(ma.P_CIRCUIT); err == nil {
			return ctx
		}
	}
	return network.WithForceDirectDial(ctx, reason)
}
