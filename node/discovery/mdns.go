package discovery

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/lmosnode/lmosnode/proto"
)

// mdnsServiceName is the DNS-SD service the host advertises and browses.
const mdnsServiceName = proto.MDNSServiceName

const (
	// mdnsYield is how long the peer with the greater ID waits before
	// dialling a LAN peer it has just found. Both ends of a LAN pair
	// usually see each other's mDNS answer within a millisecond; if both
	// dialled at once from their listen ports (go-libp2p's TCP transport
	// reuses them), TCP's simultaneous open would join the two dials into
	// one connection on which both ends act as the client, and the
	// security handshake would fail on both ends.
	mdnsYield = time.Second
	// mdnsTick is how often LAN peers that are not connected are offered
	// for a dial again (each still waits for its dial backoff).
	mdnsTick = 250 * time.Millisecond
	// mdnsForget is how long a LAN peer is remembered after it was last
	// found or last connected. go-libp2p reports an mDNS find only once
	// (until the record expires), so a peer whose first dial failed or
	// whose connection dropped would otherwise never be dialled again.
	mdnsForget = 10 * time.Minute
	// maxLANPeers bounds the LAN peers remembered; finds beyond it are
	// dialled once but not remembered.
	maxLANPeers = 256
)

// mdnsNotifee receives go-libp2p's mDNS finds. go-libp2p calls
// HandlePeerFound on a goroutine of its own per find, possibly after
// Close, so it only hands the find to mdnsLoop and never blocks.
type mdnsNotifee struct{ s *Service }

// HandlePeerFound implements mdns.Notifee.
func (n mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	s := n.s
	if s.ctx.Err() != nil {
		return
	}
	select {
	case s.found <- ai:
	default:
		s.log.Debug("mdns find dropped; too many pending", "peer", ai.ID)
	}
}

// lanPeer is a peer found by mDNS.
type lanPeer struct {
	ai        peer.AddrInfo
	notBefore time.Time // no dial before (see mdnsYield)
	seen      time.Time // last found or seen connected
}

// mdnsLoop dials the peers mDNS finds, and keeps dialling (within their
// dial backoff) those that are not connected until it forgets them.
func (s *Service) mdnsLoop() {
	lan := make(map[peer.ID]*lanPeer)
	tick := time.NewTicker(mdnsTick)
	defer tick.Stop()
	for {
		select {
		case ai := <-s.found:
			if ai.ID == s.h.ID() {
				continue
			}
			ai = lanAddrs(ai)
			s.log.Debug("mdns found peer", "peer", ai.ID, "addrs", ai.Addrs)
			now := time.Now()
			lp := lan[ai.ID]
			if lp == nil {
				lp = &lanPeer{notBefore: now}
				if s.h.ID() > ai.ID {
					lp.notBefore = now.Add(s.mdnsYield)
				}
				if len(lan) < maxLANPeers {
					lan[ai.ID] = lp
				}
			}
			lp.ai, lp.seen = ai, now
			if !now.Before(lp.notBefore) {
				s.tryDial(ai, SourceMDNS)
			}
		case now := <-tick.C:
			for id, lp := range lan {
				switch {
				case s.h.Network().Connectedness(id) == network.Connected:
					lp.seen = now
					s.claim(id, SourceMDNS)
				case now.Sub(lp.seen) > mdnsForget:
					delete(lan, id)
				case !now.Before(lp.notBefore):
					s.tryDial(lp.ai, SourceMDNS)
				}
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// lanAddrs drops the loopback addresses of a peer found on the LAN when it
// has others: a LAN peer's 127.0.0.1 is this machine, where the peer is
// not (a peer on this machine is reachable at its LAN address too).
func lanAddrs(ai peer.AddrInfo) peer.AddrInfo {
	lan := make([]ma.Multiaddr, 0, len(ai.Addrs))
	for _, a := range ai.Addrs {
		if !manet.IsIPLoopback(a) {
			lan = append(lan, a)
		}
	}
	if len(lan) > 0 {
		ai.Addrs = lan
	}
	return ai
}
