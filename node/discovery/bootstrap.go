package discovery

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/logroute"
)

// bootstrapLoop dials the bootstrap peers at start and again whenever the
// host has no peer, waiting Config.BootstrapBackoff between failed
// attempts and checking every BootstrapBackoff.Min otherwise.
func (s *Service) bootstrapLoop() {
	retry := s.cfg.BootstrapBackoff.start()
	// A federation whose bootstrap peers are down for hours would
	// otherwise log the same warning every retry.
	var unreachable logroute.Repeats
	for first := true; ; first = false {
		wait := s.cfg.BootstrapBackoff.Min
		if first || len(s.h.Network().Peers()) == 0 {
			if s.bootstrap() == 0 && len(s.h.Network().Peers()) == 0 {
				wait = retry.NextBackOff()
				level, repeated := unreachable.Level(slog.LevelWarn, "unreachable", time.Now())
				s.log.Log(context.Background(), level, "no bootstrap peer reachable", "peers", len(s.cfg.Bootstrap), "retryIn", wait, "repeated", repeated)
			} else {
				retry.Reset()
				unreachable.Reset()
			}
		} else {
			retry.Reset()
			unreachable.Reset()
		}
		if !backoff.Sleep(s.ctx, wait) {
			return
		}
	}
}

// bootstrap dials, at once, every bootstrap peer the host is not connected
// to, waits for the dials and returns how many succeeded.
func (s *Service) bootstrap() int {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for _, ai := range s.cfg.Bootstrap {
		if ai.ID == s.h.ID() {
			continue
		}
		if s.h.Network().Connectedness(ai.ID) == network.Connected {
			// Connected otherwise (it dialled us, or a DHT query did):
			// it is still our bootstrap peer.
			s.claim(ai.ID, SourceBootstrap)
			continue
		}
		wg.Go(func() {
			if err := s.dialBootstrap(ai); err != nil {
				s.log.Debug("bootstrap dial failed", "peer", ai.ID, "err", err)
				return
			}
			s.log.Info("peer connected", "peer", ai.ID, "source", SourceBootstrap)
			mu.Lock()
			ok++
			mu.Unlock()
		})
	}
	wg.Wait()
	return ok
}

// dialBootstrap dials one bootstrap peer. Our own backoff paces these
// dials, so the swarm's dial backoff is skipped (forceDirect): a bootstrap
// peer that comes back is dialled at our next attempt, not the swarm's.
func (s *Service) dialBootstrap(ai peer.AddrInfo) error {
	if s.beginDial(ai.ID, SourceBootstrap) {
		defer s.endDial(ai.ID)
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
	defer cancel()
	return s.connect(forceDirect(ctx, ai, "lmos bootstrap"), ai, SourceBootstrap)
}
