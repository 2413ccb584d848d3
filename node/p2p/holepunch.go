package p2p

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
)

// Punch runs hole punching again for the relayed connections that other
// nodes opened to this one and that are still relayed (docs/nat.md).
//
// go-libp2p's hole punching service tries once, when such a connection
// opens (the node it reached through a relay answers; this node
// coordinates). An attempt that fails leaves the connection relayed for
// as long as it lasts: the other node may not answer yet (it has no
// public address of its own so far), the packets of the punch are lost,
// or a direct connection whose close the NATs dropped still counted and
// the punch was skipped. Punch asks the service again for each such peer, punchFirst after
// it first saw the connection and then at doubling intervals up to
// punchMax, until the connection is direct or gone.
//
// The zero Punch is ready for NewHost (HostOptions.Punch), which gives it
// the service; Run runs it.
type Punch struct {
	svc *holepunch.Service // nil: hole punching is off
	log *slog.Logger

	mu    sync.Mutex
	peers map[peer.ID]*punchPeer
}

type punchPeer struct {
	next time.Time     // when to ask again
	wait time.Duration // the interval before that
	busy bool          // an attempt is on its way
	n    int           // attempts made
}

// Between two looks at the connections, before the first attempt of
// Punch's own, and at most between two.
const (
	punchTick  = 5 * time.Second
	punchFirst = 10 * time.Second
	punchMax   = 5 * time.Minute
)

// option takes the hole punching service go-libp2p builds.
func (p *Punch) option(log *slog.Logger) holepunch.Option {
	return func(s *holepunch.Service) error {
		p.svc, p.log = s, log
		return nil
	}
}

// Run looks at h's connections every punchTick until ctx ends. The
// attempts it starts end with the host at the latest (a dial and three
// punches of 5 s each at most), not with ctx.
func (p *Punch) Run(ctx context.Context, h host.Host, wg *sync.WaitGroup) {
	if p.svc == nil {
		return
	}
	p.peers = make(map[peer.ID]*punchPeer)
	wg.Go(func() {
		t := time.NewTicker(punchTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.look(h)
			}
		}
	})
}

// look starts an attempt for each peer whose turn it is.
func (p *Punch) look(h host.Host) {
	// The service answers and coordinates only once the host knows a
	// public address of its own; before that an attempt would wait.
	if !slices.Contains(h.Mux().Protocols(), holepunch.Protocol) {
		return
	}
	direct, relayedIn := make(map[peer.ID]bool), make(map[peer.ID]bool)
	for _, c := range h.Network().Conns() {
		switch {
		case !isRelayed(c.RemoteMultiaddr()):
			direct[c.RemotePeer()] = true
		case c.Stat().Direction == network.DirInbound:
			relayedIn[c.RemotePeer()] = true
		}
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.peers {
		if direct[id] || !relayedIn[id] {
			delete(p.peers, id)
		}
	}
	for id := range relayedIn {
		if direct[id] {
			continue
		}
		st := p.peers[id]
		if st == nil {
			st = &punchPeer{next: now.Add(punchFirst), wait: punchFirst}
			p.peers[id] = st
		}
		if st.busy || now.Before(st.next) {
			continue
		}
		st.busy = true
		st.n++
		p.log.Debug("hole punching again", "peer", id, "attempt", st.n)
		go p.attempt(id, st)
	}
}

func (p *Punch) attempt(id peer.ID, st *punchPeer) {
	err := p.svc.DirectConnect(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	st.busy = false
	if errors.Is(err, holepunch.ErrHolePunchActive) {
		// go-libp2p's own attempt is on its way: look again next time.
		st.n--
		return
	}
	st.wait = min(2*st.wait, punchMax)
	st.next = time.Now().Add(st.wait)
	p.log.Debug("hole punched again", "peer", id, "attempt", st.n, "err", err)
}

// punchLog is the hole punching service's event tracer: it writes each
// step of an upgrade of a relayed connection (a direct dial, a punch, a
// protocol error) to the node's log at debug, so that a connection left
// relayed says why.
type punchLog struct{ log *slog.Logger }

func (t punchLog) Trace(e *holepunch.Event) {
	l := t.log.With("peer", e.Remote)
	switch v := e.Evt.(type) {
	case *holepunch.DirectDialEvt:
		l.Debug("hole punching: direct dial", "ok", v.Success, "took", v.EllapsedTime, "err", v.Error)
	case *holepunch.ProtocolErrorEvt:
		l.Debug("hole punching: protocol error", "err", v.Error)
	case *holepunch.StartHolePunchEvt:
		l.Debug("hole punching: start", "addrs", v.RemoteAddrs, "rtt", v.RTT)
	case *holepunch.EndHolePunchEvt:
		l.Debug("hole punching: end", "ok", v.Success, "took", v.EllapsedTime, "err", v.Error)
	case *holepunch.HolePunchAttemptEvt:
		l.Debug("hole punching: attempt", "n", v.Attempt)
	}
}
