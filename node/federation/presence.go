package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
)

// Liveness: each node tells the federation that it is alive with a
// presence beat on proto.TopicPresence every Config.PresenceInterval while
// it publishes Things, and learns from the beats of others, from the syncs
// they answer and from its connections to them (opening, closing, and
// every PresenceInterval while open) when each publisher was last seen
// (directory.Directory.Seen; docs/wire.md, "Presence topic").
const (
	// DefaultPresenceInterval is how often a node that publishes Things
	// sends a presence beat: a fifth of directory.DefaultOfflineAfter, so
	// a beat or two may be lost before a publisher counts as offline.
	DefaultPresenceInterval = time.Minute
	// MaxPresenceSize is the largest presence beat accepted.
	MaxPresenceSize = 256
	// MaxPresenceAge is the oldest presence beat relayed; an older one is
	// ignored (a beat only ever dates a sighting at its own time, so a
	// replay makes no one look more alive than it was).
	MaxPresenceAge = 10 * time.Minute
)

// presence is the data of a presence beat.
type presence struct {
	// Peer is the author's peer ID, so that beats of different peers sent
	// at the same instant have different message IDs.
	Peer string `json:"peer"`
	// At is when the beat was sent.
	At time.Time `json:"at"`
	// Things and Digest are the author's live public Things and their
	// digest (directory.OwnDigest, in 16 hex digits) when it sent the
	// beat (repair.go); a beat without a digest (an older node's) is
	// not compared.
	Things int    `json:"things,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// errStaleBeat: a presence beat older than MaxPresenceAge or dated too far
// in the future.
var errStaleBeat = errors.New("presence beat out of date")

// checkPresence is the topic validator of proto.TopicPresence (through
// validator): Reject for a beat that is too large, malformed or about
// another peer than its author; Ignore for one out of date or of a
// publisher this node holds nothing of (so beats travel only as far as the
// publisher's Things); Accept, after counting it as a sighting, otherwise.
func (f *Federation) checkPresence(msg *pubsub.Message) (pubsub.ValidationResult, error) {
	data := msg.GetData()
	if len(data) > MaxPresenceSize {
		return pubsub.ValidationReject, fmt.Errorf("%w: presence beat of %d bytes, the limit is %d", lmosdht.ErrTooLarge, len(data), MaxPresenceSize)
	}
	author := msg.GetFrom()
	if err := author.Validate(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("author: %w", err)
	}
	var beat presence
	if err := json.Unmarshal(data, &beat); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("presence beat of %s: %w", author, err)
	}
	return f.checkBeat(author, beat, false)
}

// checkBeat decides on a presence beat of author, on the v1 presence topic
// or (sharded) on an announce shard. On a shard a beat of a publisher this
// node holds nothing of is accepted all the same: the shard is where the
// publisher's Things are, and the nodes of the shard need its beats.
func (f *Federation) checkBeat(author peer.ID, beat presence, sharded bool) (pubsub.ValidationResult, error) {
	if err := author.Validate(); err != nil {
		return pubsub.ValidationReject, fmt.Errorf("author: %w", err)
	}
	if beat.Peer != author.String() {
		return pubsub.ValidationReject, fmt.Errorf("presence beat of %s names %q: %w", author, beat.Peer, errNotAuthor)
	}
	if author == f.self {
		return pubsub.ValidationAccept, nil
	}
	if err := f.intake.Retired(author); err != nil {
		return pubsub.ValidationReject, err
	}
	now := f.now()
	if beat.At.Before(now.Add(-MaxPresenceAge)) || beat.At.After(now.Add(lmosdht.MaxClockSkew)) {
		return pubsub.ValidationIgnore, fmt.Errorf("presence beat of %s at %s: %w", author, beat.At, errStaleBeat)
	}
	if !f.dir.Tracked(author) {
		if sharded {
			f.compareBeat(author, beat)
			return pubsub.ValidationAccept, nil
		}
		return pubsub.ValidationIgnore, fmt.Errorf("presence beat of %s: no Thing of it held", author)
	}
	f.dir.Seen(author, beat.At)
	f.compareBeat(author, beat)
	return pubsub.ValidationAccept, nil
}

// livenessLoop, every PresenceInterval, counts each connected peer as
// seen (a live connection is a sighting, also without gossip) and, with
// gossip, sends a presence beat while the node publishes a Thing.
func (f *Federation) livenessLoop() {
	t := time.NewTicker(f.cfg.PresenceInterval)
	defer t.Stop()
	for {
		for _, p := range f.p.Host.Network().Peers() {
			f.intake.Seen(p)
		}
		f.beat()
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beat publishes one presence beat, if the node has gossip and publishes
// a Thing: on the v1 presence topic (while the node has it) and on the
// shards of its Things.
func (f *Federation) beat() {
	if f.p.PubSub == nil || len(f.dir.Own()) == 0 {
		return
	}
	live, sum := f.dir.OwnDigest()
	b := presence{Peer: f.self.String(), At: f.now().UTC(), Things: live, Digest: digest(sum)}
	f.beatShards(b)
	if f.presence == nil {
		return
	}
	data, err := json.Marshal(b)
	if err != nil {
		f.log.Error("presence beat", "err", err)
		return
	}
	if err := f.presence.Publish(f.ctx, data); err != nil && f.ctx.Err() == nil {
		f.log.Debug("presence beat", "err", err)
	}
}

// watchConnections counts every connection to a peer, and its end, as a
// sighting of that peer.
func (f *Federation) watchConnections(sub event.Subscription) {
	for {
		select {
		case <-f.ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			if ev, ok := e.(event.EvtPeerConnectednessChanged); ok {
				f.intake.Seen(ev.Peer)
			}
		}
	}
}
