package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Reasons the announce validator refuses a message. They are wrapped with
// the details, so errors.Is tells them apart (tests and logs).
var (
	// errReplay: the record has a lower lmos:seq than the one held.
	errReplay = errors.New("replay of an older version")
	// errNotAuthor: the message's author is not the record's publisher.
	errNotAuthor = errors.New("announced by another peer than its publisher")
	// errScopedAnnounced: a Thing restricted to groups on the public
	// announce topic, where it never belongs.
	errScopedAnnounced = errors.New("a Thing restricted to groups (lmos:groups) announced on the public topic")
)

// validator is a topic validator that answers what check decides and logs
// a refusal (at debug level: refusals are the peers' doing) as what's.
func (f *Federation) validator(what string, check func(*pubsub.Message) (pubsub.ValidationResult, error)) func(context.Context, peer.ID, *pubsub.Message) pubsub.ValidationResult {
	return func(_ context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		res, err := check(msg)
		if err != nil {
			f.log.Debug("gossip message refused", "what", what, "from", msg.ReceivedFrom, "result", topicval.ResultName(res), "err", err)
		}
		return res
	}
}

// checkAnnounce is the topic validator of proto.TopicAnnounce (through
// validator); see the package documentation for its answers. It decides
// with the record's checks and what this node holds or has accepted
// (learnQueue.admit); an accepted record is stored in the directory right
// after, by the learn queue's worker, while gossipsub forwards it.
func (f *Federation) checkAnnounce(msg *pubsub.Message) (pubsub.ValidationResult, error) {
	return f.checkRecord(msg, -1)
}

// checkRecord is checkAnnounce for a record on shard n (n < 0: on
// proto.TopicAnnounce). On a shard, a TD must belong to the shard. On a
// node with shards, a record this node accepted already (on another of
// its announce topics) is accepted again, not stored again, so that
// gossipsub forwards it on this topic too.
func (f *Federation) checkRecord(msg *pubsub.Message, n int) (pubsub.ValidationResult, error) {
	data := msg.GetData()
	if len(data) > lmosproto.MaxRecordSize {
		return pubsub.ValidationReject, fmt.Errorf("%w: %d bytes, the limit is %d", lmosdht.ErrTooLarge, len(data), lmosproto.MaxRecordSize)
	}
	author := msg.GetFrom()
	if err := author.Validate(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("author: %w", err)
	}
	rec, err := f.intake.Check(author, data)
	if err != nil {
		if errors.Is(err, ErrNotAdmitted) {
			// The operator's choice, not the sender's fault.
			return pubsub.ValidationIgnore, err
		}
		if errors.Is(err, lmosdht.ErrWrongPublisher) {
			err = fmt.Errorf("%w: %w", errNotAuthor, err)
		}
		return pubsub.ValidationReject, fmt.Errorf("from %s: %w", author, err)
	}
	if !public(rec) {
		return pubsub.ValidationReject, fmt.Errorf("from %s: thing %q: %w", author, rec.ThingID, errScopedAnnounced)
	}
	if n >= 0 && !inShard(rec, n) {
		return pubsub.ValidationReject, fmt.Errorf("from %s: thing %q on shard %d: %w", author, rec.ThingID, n, errWrongShard)
	}
	if msg.ReceivedFrom == f.self {
		// Our own announcement: Publish stored it already.
		return pubsub.ValidationAccept, nil
	}
	if author == f.self {
		// Our own record can only come from us; gossipsub drops such
		// messages itself, this keeps the directory safe if it did not.
		return pubsub.ValidationIgnore, fmt.Errorf("thing %q: own record received from %s", rec.ThingID, msg.ReceivedFrom)
	}
	if n >= 0 && !f.keepsRecord(author, rec) {
		// A light node's shard brought a Thing it does not use: checked
		// and relayed, not stored.
		return pubsub.ValidationAccept, nil
	}
	// Storing it counts the record's proof time as a sighting of its
	// publisher; the message itself is not (a replayed message is as
	// validly signed as the original).
	err = f.learn.admit(rec)
	switch {
	case errors.Is(err, errReplay), errors.Is(err, directory.ErrQuota):
		return pubsub.ValidationReject, err
	case f.sharded() && errors.Is(err, errSame):
		// Heard already on another of the node's announce topics: it
		// is forwarded on this one too, for the peers that carry only
		// this one (a v1 node, a light node in one shard).
		return pubsub.ValidationAccept, nil
	case err != nil:
		return pubsub.ValidationIgnore, err
	}
	return pubsub.ValidationAccept, nil
}

// announce publishes rec on the announce topic. The caller holds pubMu, so
// announcements leave in seq order.
func (f *Federation) announce(ctx context.Context, rec *lmosproto.Record) {
	if !public(rec) {
		return
	}
	f.announceShards(ctx, rec)
	if f.topic == nil {
		return
	}
	peers := f.topic.ListPeers()
	if len(peers) == 0 {
		f.unheard = true
	}
	if err := f.topic.Publish(ctx, rec.Raw); err != nil {
		f.log.Warn("announce thing", "thing", rec.ThingID, "seq", rec.Seq, "err", err)
		return
	}
	f.noteSent(f.topic, false, rec, peers)
	f.log.Debug("announced thing", "thing", rec.ThingID, "seq", rec.Seq, "signed", rec.Signer.Created, "topicPeers", len(peers))
}

// watchTopic republishes the own records when a peer joins the announce
// topic after announcements went out to nobody.
//
// A PeerJoin only means that the peer's subscription arrived. Gossipsub
// sends to a peer only once it has set up its outbound queue to it, which
// it does after its own identify of the peer completed; until then a
// publish skips the peer silently, and Topic.ListPeers (which lists only
// subscribed peers it can send to) leaves it out. Under load the
// subscription can come first, so the republication waits until the
// joining peer is listed.
func (f *Federation) watchTopic(eh *pubsub.TopicEventHandler) {
	for {
		ev, err := eh.NextPeerEvent(f.ctx)
		if err != nil {
			return
		}
		if ev.Type != pubsub.PeerJoin {
			continue
		}
		// Whether announcements went out to nobody is asked once the
		// peer is listed, not now: an announcement made between its
		// subscription and its listing reaches no one, and this event
		// has passed by then. Waiting must not hold up the events of
		// other peers.
		f.wg.Go(func() { f.republishTo(ev.Peer) })
	}
}

// Waiting for a joining peer to become one gossipsub sends to: how often
// the topic's peers are listed, and for how long at most.
const (
	topicPeerPoll = 20 * time.Millisecond
	topicPeerWait = time.Minute
)

// republishTo waits until gossipsub sends announcements to pid, then
// republishes the own records if announcements still went out to nobody.
// It gives up when pid disconnects, after topicPeerWait, or when the
// federation closes.
func (f *Federation) republishTo(pid peer.ID) {
	if !f.awaitTopicPeer(pid) {
		return
	}
	f.pubMu.Lock()
	unheard := f.unheard
	f.unheard = false
	f.pubMu.Unlock()
	if unheard {
		f.log.Debug("first peer on the announce topic; republishing", "peer", pid)
		f.republish(true)
	}
}

// awaitTopicPeer reports whether pid came to be listed among the announce
// topic's peers; see republishTo.
func (f *Federation) awaitTopicPeer(pid peer.ID) bool {
	deadline := time.NewTimer(topicPeerWait)
	defer deadline.Stop()
	tick := time.NewTicker(topicPeerPoll)
	defer tick.Stop()
	for {
		if slices.Contains(f.topic.ListPeers(), pid) {
			return true
		}
		if f.p.Host.Network().Connectedness(pid) != network.Connected {
			f.log.Debug("peer on the announce topic disconnected before it could hear us", "peer", pid)
			return false
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			f.log.Debug("peer on the announce topic not reachable by gossip; not republishing", "peer", pid, "waited", topicPeerWait)
			return false
		case <-f.ctx.Done():
			return false
		}
	}
}

// public reports whether rec may travel on the public paths (gossip, DHT,
// sync): not a Thing restricted to groups.
func public(rec *lmosproto.Record) bool {
	return rec.TD == nil || len(rec.TD.Groups) == 0
}
