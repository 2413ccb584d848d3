package discovery

import (
	"context"

	"github.com/libp2p/go-libp2p/core/discovery"

	"github.com/lmosnode/lmosnode/node/backoff"
)

// advertiseLoop keeps this host advertised under RendezvousNamespace:
// again after 7/8 of the record TTL, or after a backoff if advertising
// failed (as it does while the DHT routing table is empty).
//
// It does what go-libp2p's discovery/util.Advertise does, in a goroutine
// the service owns (Advertise starts one nobody waits for) and with a
// growing retry delay instead of its fixed two minutes, which would keep
// a freshly started node unadvertised for two minutes after its first
// attempt failed on an empty routing table.
func (s *Service) advertiseLoop() {
	retry := s.cfg.AdvertiseBackoff.start()
	for {
		ttl, err := s.rd.Advertise(s.ctx, RendezvousNamespace)
		if s.ctx.Err() != nil {
			return
		}
		wait := 7 * ttl / 8
		if err != nil {
			wait = retry.NextBackOff()
			s.log.Debug("rendezvous advertise failed", "namespace", RendezvousNamespace, "retryIn", wait, "err", err)
		} else {
			retry.Reset()
			s.log.Debug("rendezvous advertised", "namespace", RendezvousNamespace, "ttl", ttl)
		}
		if !backoff.Sleep(s.ctx, wait) {
			return
		}
	}
}

// findLoop looks up the other LMOS nodes under RendezvousNamespace and
// dials them, at intervals set by Config.FindBackoff.
func (s *Service) findLoop() {
	interval := s.cfg.FindBackoff.start()
	for {
		dialled := s.findRound()
		if dialled > 0 || len(s.h.Network().Peers()) == 0 {
			// New peers may bring more; and a lookup with no peer to ask
			// proves nothing, so it must not slow the next one down.
			interval.Reset()
		}
		if !backoff.Sleep(s.ctx, interval.NextBackOff()) {
			return
		}
	}
}

// findRound runs one rendezvous lookup and returns the number of dials it
// started.
func (s *Service) findRound() int {
	if s.atLimit() {
		return 0
	}
	ctx, cancel := context.WithTimeout(s.ctx, findTimeout)
	defer cancel()
	ch, err := s.rd.FindPeers(ctx, RendezvousNamespace, discovery.Limit(s.cfg.MaxPeers))
	if err != nil {
		s.log.Debug("rendezvous lookup failed", "namespace", RendezvousNamespace, "err", err)
		return 0
	}
	dialled := 0
	for ai := range ch {
		if s.tryDial(ai, SourceDHT) {
			dialled++
		}
		if s.atLimit() {
			cancel()
			for range ch { // kad-dht closes it once it sees ctx done
			}
			break
		}
	}
	s.log.Debug("rendezvous lookup done", "namespace", RendezvousNamespace, "dialled", dialled)
	return dialled
}
