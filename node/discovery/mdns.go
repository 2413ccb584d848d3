package discovery

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// mdnsServiceName is the DNS-SD service the host advertises and browses.
const mdnsServiceName = proto.MDNSServiceName

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

// mdnsLoop dials the peers mDNS finds.
func (s *Service) mdnsLoop() {
	for {
		select {
		case ai := <-s.found:
			s.log.Debug("mdns found peer", "peer", ai.ID, "addrs", ai.Addrs)
			s.tryDial(ai, SourceMDNS)
		case <-s.ctx.Done():
			return
		}
	}
}
