package groupsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/backoff"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// syncRequest is the request frame of the sync protocol.
type syncRequest struct {
	Group       string   `json:"group"`
	Heads       []string `json:"heads,omitempty"`
	Resubscribe bool     `json:"resubscribe,omitempty"`
}

// handleSync answers a sync request: the log, to current members (and
// to the former members this node evicted) only.
func (s *Service) handleSync(stream network.Stream) {
	remote := stream.Conn().RemotePeer()
	ans, g, resub := s.serveSync(stream, remote)
	writeAnswer(stream, ans)
	if g == nil {
		return
	}
	if resub {
		s.spawn(func() { s.resubscribe(g) })
	}
	st := g.state()
	if !st.IsMember(s.self) {
		return
	}
	// remote holds this node as a member: if its subscription was
	// dropped here, it will answer a request to announce it again.
	if st.IsMember(remote) && s.wasDropped(groups.Topic(g.id), remote) {
		s.askResubscribe(g, st)
	}
	if s.p.OnMemberSync != nil {
		s.p.OnMemberSync(g.id, remote)
	}
}

func (s *Service) serveSync(st network.Stream, remote peer.ID) (logAnswer, *group, bool) {
	if err := st.SetDeadline(time.Now().Add(SyncTimeout)); err != nil {
		return logAnswer{Error: err.Error()}, nil, false
	}
	if !s.serveLimit.Allow(remote) {
		return logAnswer{Error: "rate limited"}, nil, false
	}
	raw, err := lmosproto.ReadFrame(st, maxFrame)
	if err != nil {
		return logAnswer{Error: "read request: " + err.Error()}, nil, false
	}
	var req syncRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return logAnswer{Error: "request: " + err.Error()}, nil, false
	}
	g := s.get(req.Group)
	if g != nil && !g.state().IsMember(remote) && g.wasMember(remote) {
		// A member this node saw removed (or leave) learns of it: its
		// subscription is refused here now, so it may have missed the
		// operation on the topic. The log is in the DHT anyway.
		return logAnswer{Log: g.log.Marshal()}, nil, false
	}
	if g == nil || !g.state().IsMember(remote) {
		// The same answer for an unknown group and a non-member: an
		// outsider learns nothing.
		return logAnswer{Error: "not a member of a group this node knows"}, nil, false
	}
	if len(req.Heads) > groups.MaxLogOps {
		return logAnswer{Error: fmt.Sprintf("heads: %d, at most %d", len(req.Heads), groups.MaxLogOps)}, nil, false
	}
	// The asker has operations this node lacks: ask back.
	for _, h := range req.Heads {
		if !g.log.Has(h) {
			if s.due(remote, g.id, "heads", time.Second) {
				s.spawn(func() { s.syncWith(g, remote, false) })
			}
			break
		}
	}
	return logAnswer{Log: g.log.Marshal()}, g, req.Resubscribe && g.state().IsMember(s.self)
}

// syncWith asks p for its log of g and merges it; with resubscribe it
// also asks p to announce its topic subscription again. It reports
// whether p answered with a log.
func (s *Service) syncWith(g *group, p peer.ID, resubscribe bool) bool {
	_, ok := s.syncLog(g, p, resubscribe)
	return ok
}

// syncLog is syncWith, and returns p's log too (nil if it does not
// check).
func (s *Service) syncLog(g *group, p peer.ID, resubscribe bool) (*groups.Log, bool) {
	if p == s.self || s.ctx.Err() != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(s.ctx, SyncTimeout)
	defer cancel()
	req, err := json.Marshal(syncRequest{Group: g.id, Heads: g.log.Heads(), Resubscribe: resubscribe})
	if err != nil {
		return nil, false
	}
	ans, err := s.exchange(ctx, p, protocol.ID(groups.ProtocolSync), req)
	if err == nil && ans.Error != "" {
		err = fmt.Errorf("refused: %s", truncate(ans.Error, 200))
	}
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Debug("group sync failed", "group", g.id, "peer", p, "err", err)
		}
		return nil, false
	}
	l, err := s.p.Ops.ParseLog(g.id, ans.Log)
	if err != nil {
		s.log.Info("group log from peer does not check", "group", g.id, "peer", p, "err", err)
		return nil, true
	}
	if _, changed, err := s.adopt(l); err != nil {
		s.log.Warn("merge group log", "group", g.id, "peer", p, "err", err)
	} else if changed {
		s.log.Debug("group log merged", "group", g.id, "peer", p)
	}
	return l, true
}

// watchIdentify syncs, for every group they share, with members that
// connect, and retries at once the pending joins of issuers that connect.
func (s *Service) watchIdentify(sub event.Subscription) {
	for ev := range sub.Out() {
		e, ok := ev.(event.EvtPeerIdentificationCompleted)
		if !ok {
			continue
		}
		if !slices.Contains(e.Protocols, protocol.ID(groups.ProtocolSync)) {
			continue
		}
		s.kickPending(e.Peer)
		for _, g := range s.all() {
			st := g.state()
			if !st.IsMember(s.self) || !st.IsMember(e.Peer) || !s.due(e.Peer, g.id, "connected", SyncEvery) {
				continue
			}
			s.spawn(func() { s.syncWith(g, e.Peer, false) })
		}
	}
}

// due reports whether a sync with p for group, for the reason why, may
// start now (none for this reason within every), and notes it.
func (s *Service) due(p peer.ID, group, why string, every time.Duration) bool {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	k := syncKey{p: p, group: group, why: why}
	if time.Since(s.syncAt[k]) < every {
		return false
	}
	if len(s.syncAt) > maxDropped {
		clear(s.syncAt)
	}
	s.syncAt[k] = time.Now()
	return true
}

// antiEntropy syncs, every AntiEntropyEvery, each group the node is a
// member of with one connected member picked at random.
func (s *Service) antiEntropy() {
	t := time.NewTicker(s.cfg.AntiEntropyEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		connected := s.p.Host.Network().Peers()
		for _, g := range s.all() {
			st := g.state()
			if !st.IsMember(s.self) {
				continue
			}
			s.askResubscribe(g, st)
			var cands []peer.ID
			for _, p := range connected {
				if p != s.self && st.IsMember(p) {
					cands = append(cands, p)
				}
			}
			if len(cands) == 0 {
				continue
			}
			p := cands[rand.IntN(len(cands))]
			s.spawn(func() { s.syncWith(g, p, false) })
		}
	}
}

// fetchDHT gets the group's log from the DHT.
func (s *Service) fetchDHT(ctx context.Context, id string) (*groups.Log, error) {
	ctx, cancel := context.WithTimeout(ctx, DHTTimeout)
	defer cancel()
	raw, err := s.p.DHT.GetValue(ctx, groups.Key(id))
	if err != nil {
		return nil, fmt.Errorf("dht get %s: %w", groups.Key(id), err)
	}
	l, err := s.p.Ops.ParseLog(id, raw)
	if err != nil {
		return nil, fmt.Errorf("dht log of %s: %w", id, err)
	}
	return l, nil
}

// catchUp merges the DHT log of g, retrying a few times while the DHT
// has no peers yet.
func (s *Service) catchUp(g *group) {
	for _, wait := range []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second} {
		if !backoff.Sleep(s.ctx, wait) {
			return
		}
		l, err := s.fetchDHT(s.ctx, g.id)
		if err != nil {
			s.log.Debug("group catch-up from the dht", "group", g.id, "err", err)
			continue
		}
		if _, changed, err := s.adopt(l); err != nil {
			s.log.Warn("merge group log", "group", g.id, "err", err)
		} else if changed {
			s.log.Info("group log caught up from the dht", "group", g.id)
		}
		return
	}
}

// putWorker puts the logs of changed groups in the DHT, a burst of
// operations at once.
func (s *Service) putWorker() {
	for {
		ids, ok := s.puts.next(s.ctx, putDebounce)
		if !ok {
			return
		}
		for _, id := range ids {
			if g := s.get(id); g != nil {
				s.put(g)
			}
		}
	}
}

// put puts g's log in the DHT.
func (s *Service) put(g *group) {
	ctx, cancel := context.WithTimeout(s.ctx, DHTTimeout)
	defer cancel()
	if err := s.p.DHT.PutValue(ctx, groups.Key(g.id), g.log.Marshal()); err != nil {
		if s.ctx.Err() == nil {
			s.log.Info("put group log in the dht", "group", g.id, "err", err)
		}
		return
	}
	s.log.Debug("group log in the dht", "group", g.id, "ops", g.state().Ops)
}

// republishLoop puts the logs of the node's groups in the DHT every
// RepublishInterval.
func (s *Service) republishLoop() {
	t := time.NewTicker(s.cfg.RepublishInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		for _, g := range s.all() {
			if g.state().IsMember(s.self) {
				s.puts.add(g.id)
			}
		}
	}
}
