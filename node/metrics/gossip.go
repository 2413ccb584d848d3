package metrics

import (
	"strings"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// GossipTracer returns a gossipsub tracer counting the messages received
// in lmos_gossip_messages_total and their bytes in
// lmos_gossip_received_bytes_total. kind names the kind of a topic (a fixed,
// small set, e.g. "announce", "group", "events"), never the topic itself.
func (m *Metrics) GossipTracer(kind func(topic string) string) pubsub.RawTracer {
	return gossipTracer{m: m, kind: kind}
}

type gossipTracer struct {
	m    *Metrics
	kind func(topic string) string
}

func (t gossipTracer) count(msg *pubsub.Message, outcome, reason string) {
	t.m.gossip.WithLabelValues(t.kind(msg.GetTopic()), outcome, reason).Inc()
}

func (t gossipTracer) received(msg *pubsub.Message, outcome string) {
	kind := t.kind(msg.GetTopic())
	t.m.gossip.WithLabelValues(kind, outcome, "").Inc()
	t.m.gossipBytes.WithLabelValues(kind, outcome).Add(float64(len(msg.GetData())))
}

func (t gossipTracer) DeliverMessage(msg *pubsub.Message)   { t.received(msg, "delivered") }
func (t gossipTracer) DuplicateMessage(msg *pubsub.Message) { t.received(msg, "duplicate") }

// RejectMessage counts a message by gossipsub's reason, a fixed set
// ("validation failed", "validation ignored", "blacklisted peer", …)
// written with underscores.
func (t gossipTracer) RejectMessage(msg *pubsub.Message, reason string) {
	t.count(msg, "rejected", strings.ReplaceAll(reason, " ", "_"))
}

func (gossipTracer) AddPeer(peer.ID, protocol.ID)             {}
func (gossipTracer) RemovePeer(peer.ID)                       {}
func (gossipTracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (gossipTracer) OnClosedOutboundStream(peer.ID)           {}
func (gossipTracer) Join(string)                              {}
func (gossipTracer) Leave(string)                             {}
func (gossipTracer) Graft(peer.ID, string)                    {}
func (gossipTracer) Prune(peer.ID, string)                    {}
func (gossipTracer) ValidateMessage(*pubsub.Message)          {}
func (gossipTracer) ThrottlePeer(peer.ID)                     {}
func (gossipTracer) RecvRPC(*pubsub.RPC)                      {}
func (gossipTracer) SendRPC(*pubsub.RPC, peer.ID)             {}
func (gossipTracer) DropRPC(*pubsub.RPC, peer.ID)             {}
func (gossipTracer) UndeliverableMessage(*pubsub.Message)     {}
