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
	// DefaultBeatRate is the presence beats a second a node aims to hear
	// (Config.BeatRate).
	DefaultBeatRate = 1.0
	// MaxBeatSlowdown bounds how much a node slows its beats: to at most
	// this many PresenceIntervals apart.
	MaxBeatSlowdown = 10
	// MaxBeatEvery is the longest pace a beat may state (every) that
	// its receivers take: a publisher keeps counting as online for
	// beatsPerWindow such paces after its last beat, and no longer.
	MaxBeatEvery = 10 * time.Minute
	// beatsPerWindow is how many beats a publisher that slowed its beats
	// may miss before it counts as offline: as many as at the usual pace
	// (directory.DefaultOfflineAfter is five PresenceIntervals).
	beatsPerWindow = 5
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
	// Every is the author's pace when it slowed its beats (beatPace): its
	// next beat comes at most this many seconds after this one. Absent
	// at the usual pace.
	Every float64 `json:"every,omitempty"`
}

// window is how long after b its author counts as online when it slowed
// its beats: beatsPerWindow of its stated pace, at most MaxBeatEvery each;
// 0 at the usual pace (the directory's OfflineAfter).
func (b presence) window() time.Duration {
	if b.Every <= 0 {
		return 0
	}
	every := min(time.Duration(b.Every*float64(time.Second)), MaxBeatEvery)
	return beatsPerWindow * every
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
	f.heardBeat(sharded)
	if !f.dir.Tracked(author) {
		if sharded {
			f.compareBeat(author, beat)
			return pubsub.ValidationAccept, nil
		}
		return pubsub.ValidationIgnore, fmt.Errorf("presence beat of %s: no Thing of it held", author)
	}
	f.dir.SeenEvery(author, beat.At, beat.window())
	f.compareBeat(author, beat)
	return pubsub.ValidationAccept, nil
}

// heardBeat counts a beat of another node this node accepted on a topic
// (sharded: on a shard) for the pace of its own (beatPace): on the
// shards if it has them, else on the v1 presence topic, so that a beat
// sent on both counts once.
func (f *Federation) heardBeat(sharded bool) {
	if sharded == f.sharded() {
		f.beatsHeard.Add(1)
	}
}

// livenessLoop, every PresenceInterval, counts each connected peer as
// seen (a live connection is a sighting, also without gossip) and, with
// gossip, sends a presence beat while the node publishes a Thing: every
// PresenceInterval, or less often while it hears more beats than
// Config.BeatRate (beatPace).
func (f *Federation) livenessLoop() {
	base := f.cfg.PresenceInterval
	t := time.NewTicker(base)
	defer t.Stop()
	every, last := base, time.Now().Add(-base) // the first beat at once
	for {
		for _, p := range f.p.Host.Network().Peers() {
			f.intake.Seen(p)
		}
		if since := time.Since(last); since >= every-base/2 {
			f.beat(every)
			next := beatPace(every, base, f.beatsHeard.Swap(0), since, f.cfg.BeatRate)
			if next != every {
				f.log.Debug("presence beats paced", "every", next, "was", every)
			}
			every, last = next, time.Now()
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beatPace is the pace of a node's presence beats after it heard heard
// beats of others over the last over at the pace every: the pace at which
// it would have heard want a second, were the others to pace theirs
// alike (as they do), changed by at most a factor of two at a time, and
// between base and MaxBeatSlowdown times base. A node of a small
// federation beats every base; as the federation grows, every node slows
// its beats and what each hears stays about want a second.
func beatPace(every, base time.Duration, heard int64, over time.Duration, want float64) time.Duration {
	if over <= 0 || want <= 0 {
		return every
	}
	rate := float64(heard) / over.Seconds()
	next := time.Duration(float64(every) * rate / want)
	next = min(max(next, every/2), 2*every)
	return min(max(next, base), MaxBeatSlowdown*base)
}

// beat publishes one presence beat, if the node has gossip and publishes
// a Thing: on the v1 presence topic (while the node has it) and on the
// shards of its Things. every is the node's pace, stated in the beat when
// slower than PresenceInterval.
func (f *Federation) beat(every time.Duration) {
	if f.p.PubSub == nil || len(f.dir.Own()) == 0 {
		return
	}
	live, sum := f.dir.OwnDigest()
	b := presence{Peer: f.self.String(), At: f.now().UTC(), Things: live, Digest: digest(sum)}
	if every > f.cfg.PresenceInterval {
		b.Every = every.Seconds()
	}
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
