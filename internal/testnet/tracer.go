package testnet

import (
	"bytes"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Verdict is one message that a node's gossipsub validation pipeline
// refused.
type Verdict struct {
	// From is the peer that forwarded the message (the one penalised).
	From peer.ID
	// Author is the message's author.
	Author peer.ID
	// Reason is gossipsub's reason, e.g. pubsub.RejectValidationFailed
	// (the validator said Reject) or pubsub.RejectValidationIgnored (it
	// said Ignore).
	Reason string
	// Size is the length of the message's data.
	Size int
	// Data is the message's data (a copy), up to 64 KiB.
	Data []byte
}

// Tracer is a pubsub.RawTracer that records the messages a node refused
// and counts those it delivered. Give it to a node with
// node.WithPubSubTracer. It is safe for concurrent use.
type Tracer struct {
	mu         sync.Mutex
	refused    []Verdict
	delivered  int
	duplicates int
	received   int
	// mesh holds the node's mesh peers by topic (Graft adds, Prune
	// removes).
	mesh map[string]map[peer.ID]bool
}

// InMesh reports whether p is in the node's mesh of topic: the node
// forwards the topic's messages to p.
func (tr *Tracer) InMesh(p peer.ID, topic string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.mesh[topic][p]
}

// Graft records that p joined the node's mesh of topic.
func (tr *Tracer) Graft(p peer.ID, topic string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.mesh == nil {
		tr.mesh = map[string]map[peer.ID]bool{}
	}
	if tr.mesh[topic] == nil {
		tr.mesh[topic] = map[peer.ID]bool{}
	}
	tr.mesh[topic][p] = true
}

// Prune records that p left the node's mesh of topic.
func (tr *Tracer) Prune(p peer.ID, topic string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.mesh[topic], p)
}

var _ pubsub.RawTracer = (*Tracer)(nil)

// Refused returns the refusals recorded so far.
func (tr *Tracer) Refused() []Verdict {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]Verdict(nil), tr.refused...)
}

// RefusedFrom returns the refusals of messages forwarded by p.
func (tr *Tracer) RefusedFrom(p peer.ID) []Verdict {
	var out []Verdict
	for _, v := range tr.Refused() {
		if v.From == p {
			out = append(out, v)
		}
	}
	return out
}

// Delivered returns how many messages passed validation.
func (tr *Tracer) Delivered() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.delivered
}

// Duplicates returns how many messages arrived again after their first
// copy (dropped without validation).
func (tr *Tracer) Duplicates() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.duplicates
}

// Received returns how many RPCs arrived that carried messages.
func (tr *Tracer) Received() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.received
}

// DuplicateMessage counts a duplicate.
func (tr *Tracer) DuplicateMessage(*pubsub.Message) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.duplicates++
}

// RecvRPC counts an RPC that carries messages.
func (tr *Tracer) RecvRPC(rpc *pubsub.RPC) {
	if len(rpc.GetPublish()) == 0 {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.received++
}

// RejectMessage records a refused message.
func (tr *Tracer) RejectMessage(msg *pubsub.Message, reason string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	data := msg.GetData()
	tr.refused = append(tr.refused, Verdict{From: msg.ReceivedFrom, Author: msg.GetFrom(), Reason: reason, Size: len(data),
		Data: bytes.Clone(data[:min(len(data), 64<<10)])})
}

// DeliverMessage counts a delivered message.
func (tr *Tracer) DeliverMessage(*pubsub.Message) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.delivered++
}

// The remaining events are not recorded.

func (*Tracer) AddPeer(peer.ID, protocol.ID)             {}
func (*Tracer) RemovePeer(peer.ID)                       {}
func (*Tracer) OnNewOutboundStream(peer.ID, protocol.ID) {}
func (*Tracer) OnClosedOutboundStream(peer.ID)           {}
func (*Tracer) Join(string)                              {}
func (*Tracer) Leave(string)                             {}
func (*Tracer) ValidateMessage(*pubsub.Message)          {}
func (*Tracer) ThrottlePeer(peer.ID)                     {}
func (*Tracer) SendRPC(*pubsub.RPC, peer.ID)             {}
func (*Tracer) DropRPC(*pubsub.RPC, peer.ID)             {}
func (*Tracer) UndeliverableMessage(*pubsub.Message)     {}
