package federation

import (
	"slices"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Catching up a peer that comes onto an announce topic just after an own
// announcement (docs/wire.md, "Gossipsub").
//
// An announcement goes to the topic's peers that gossipsub lists when it is
// published. A peer whose subscription is still on its way is skipped, and
// gossipsub's own repair does not reach it once the heartbeat has grafted
// it into the mesh: IHAVE gossip goes to peers outside the mesh only. So
// the node remembers its announcements, and the topic's peers when each
// went out, for catchUpWindow. A peer listed on the topic later that could
// have been on its way then gets the record again: re-signed at the same
// seq (gossipsub drops the same bytes as a duplicate), published on that
// topic. A peer could have been on its way if it was connected when the
// announcement went out, and it had connected at most catchUpWindow
// before (its subscriptions follow the connection and identify; under
// load that takes seconds), or it is listed within subscribeSlack of the
// announcement (it joined the topic just then). A peer connected later,
// or connected long before that joins the topic later, is not caught up:
// nothing it missed was on its way, and a node that joins a shard to
// publish there, or a node dialled for the DHT, would otherwise make every
// publisher of the shard announce its last seconds again. Each catch-up
// is a flood to the whole topic (no protocol of the node sends a record
// unasked to one peer); maxCatchUps bounds it.
const (
	// catchUpWindow is how long the node remembers an announcement, and
	// how long before it a peer may have connected to be caught up.
	catchUpWindow = 10 * time.Second
	// subscribeSlack is how soon after an announcement a peer connected
	// for longer must be listed to be caught up.
	subscribeSlack = 2 * time.Second
	// catchUpPoll is how often the topics of such announcements are
	// listed. Nothing is listed while there is none.
	catchUpPoll = 200 * time.Millisecond
	// maxCatchUps bounds how often one announcement is sent again, so
	// that peers coming and going make no more than that many of it.
	maxCatchUps = 3
	// maxSent bounds the announcements remembered; past it the oldest is
	// forgotten (no peer new on its topic gets it again).
	maxSent = 4096
)

// sentOn is an own announcement on one topic, remembered for
// catchUpWindow.
type sentOn struct {
	topic *pubsub.Topic
	shard bool // a shard topic, else proto.TopicAnnounce
	id    string
	seq   uint64
	proof time.Time // the proof of the record whose bytes went out last
	at    time.Time // when the announcement (not a catch-up) went out
	to    *listing  // the topic's peers when it went out last
	again int       // how often it went out again
}

// listing is a topic's peers at one moment. Announcements made while the
// peers stay the same share one.
type listing struct {
	peers map[peer.ID]struct{}
}

// newOn returns the peers of peers that l does not list.
func (l *listing) newOn(peers []peer.ID) []peer.ID {
	var out []peer.ID
	for _, p := range peers {
		if _, ok := l.peers[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// sentLog is the own announcements of the last catchUpWindow, oldest
// first, and each topic's last listing. Guarded by pubMu.
type sentLog struct {
	entries []*sentOn
	last    map[*pubsub.Topic]*listing
	// window and slack are catchUpWindow and subscribeSlack, unless a
	// test set them.
	window, slack time.Duration
}

func (s *sentLog) windows() (window, slack time.Duration) {
	window, slack = catchUpWindow, subscribeSlack
	if s.window > 0 {
		window = s.window
	}
	if s.slack > 0 {
		slack = s.slack
	}
	return window, slack
}

// listed returns the listing of peers on t, the last one if it lists the
// same peers.
func (s *sentLog) listed(t *pubsub.Topic, peers []peer.ID) *listing {
	if l := s.last[t]; l != nil && len(l.peers) == len(peers) && l.newOn(peers) == nil {
		return l
	}
	l := &listing{peers: make(map[peer.ID]struct{}, len(peers))}
	for _, p := range peers {
		l.peers[p] = struct{}{}
	}
	if s.last == nil {
		s.last = make(map[*pubsub.Topic]*listing)
	}
	s.last[t] = l
	return l
}

// prune forgets the announcements older than catchUpWindow, and the
// oldest past maxSent.
func (s *sentLog) prune(now time.Time) {
	window, _ := s.windows()
	n := 0
	for n < len(s.entries) && (now.Sub(s.entries[n].at) > window || len(s.entries)-n > maxSent) {
		n++
	}
	if n == 0 {
		return
	}
	clear(s.entries[:n])
	s.entries = s.entries[n:]
	if len(s.entries) == 0 {
		s.entries, s.last = nil, nil
	}
}

// noteSent remembers that rec went out on t (a shard topic if shard) to
// peers. The caller holds pubMu.
func (f *Federation) noteSent(t *pubsub.Topic, shard bool, rec *lmosproto.Record, peers []peer.ID) {
	now := time.Now()
	s := &f.sent
	s.prune(now)
	s.entries = append(s.entries, &sentOn{
		topic: t, shard: shard, id: rec.ThingID, seq: rec.Seq, proof: rec.Signer.Created,
		at: now, to: s.listed(t, peers),
	})
}

// catchUp sends each announcement of the last catchUpWindow again on its
// topic if the topic lists a peer now that it did not list when the
// announcement went out and that could have been on its way then (unless
// a newer announcement of the Thing there reached it).
func (f *Federation) catchUp() {
	f.pubMu.Lock()
	defer f.pubMu.Unlock()
	now := time.Now()
	f.sent.prune(now)
	if len(f.sent.entries) == 0 {
		return
	}
	window, slack := f.sent.windows()
	type key struct {
		topic *pubsub.Topic
		id    string
	}
	peers := make(map[*pubsub.Topic][]peer.ID)
	newPeers := make(map[*listing][]peer.ID)
	connected := make(map[peer.ID]time.Time)
	// onItsWay reports whether p, not listed when e went out, could have
	// been on its way then: it was connected, and it had connected
	// within the window before, or it is listed within the slack after.
	onItsWay := func(p peer.ID, e *sentOn) bool {
		at, ok := connected[p]
		if !ok {
			for _, c := range f.p.Host.Network().ConnsToPeer(p) {
				if o := c.Stat().Opened; at.IsZero() || o.Before(at) {
					at = o
				}
			}
			connected[p] = at
		}
		if at.IsZero() || at.After(e.at) {
			return false
		}
		return at.After(e.at.Add(-window)) || now.Sub(e.at) <= slack
	}
	var due map[key]*sentOn // the newest announcement of a Thing on a topic, if due
	for _, e := range f.sent.entries {
		ps, ok := peers[e.topic]
		if !ok {
			ps = e.topic.ListPeers()
			peers[e.topic] = ps
		}
		np, ok := newPeers[e.to]
		if !ok {
			np = e.to.newOn(ps)
			newPeers[e.to] = np
		}
		k := key{e.topic, e.id}
		if e.again < maxCatchUps && slices.ContainsFunc(np, func(p peer.ID) bool { return onItsWay(p, e) }) {
			if due == nil {
				due = make(map[key]*sentOn)
			}
			due[k] = e
		} else if due != nil {
			delete(due, k)
		}
	}
	byID := make(map[string][]*sentOn, len(due))
	for k, e := range due {
		byID[k.id] = append(byID[k.id], e)
	}
	var n int
	for id, es := range byID {
		if f.ctx.Err() != nil {
			return
		}
		if f.sendAgain(id, es, peers) {
			n++
		}
	}
	if n > 0 {
		f.log.Debug("announced own things again for peers new on their topics", "things", n)
	}
}

// sendAgain publishes the own record of Thing id again on the topics of
// es, its announcements there, re-signed if the bytes it holds went out on
// one of them. It reports whether it did. The caller holds pubMu.
func (f *Federation) sendAgain(id string, es []*sentOn, peers map[*pubsub.Topic][]peer.ID) bool {
	held, ok := f.dir.Latest(f.self, id)
	if !ok || !f.isSettled(id) {
		return false
	}
	// Only what the node holds goes out again: not a version that a newer
	// one followed, nor one whose write failed.
	es = slices.DeleteFunc(es, func(e *sentOn) bool { return e.seq != held.Seq })
	if len(es) == 0 {
		return false
	}
	rec, err := held.Record()
	if err != nil {
		f.log.Error("read own record", "thing", id, "err", err)
		return false
	}
	if slices.ContainsFunc(es, func(e *sentOn) bool { return e.proof.Equal(rec.Signer.Created) }) {
		if rec = f.resignStored(rec, f.now()); rec == nil {
			return false
		}
	}
	for _, e := range es {
		data := rec.Raw
		if e.shard {
			if data = f.shardData(rec); data == nil {
				continue
			}
		}
		if err := e.topic.Publish(f.ctx, data); err != nil {
			f.log.Warn("announce thing again", "thing", id, "topic", e.topic.String(), "err", err)
			continue
		}
		e.proof, e.to = rec.Signer.Created, f.sent.listed(e.topic, peers[e.topic])
		e.again++
	}
	return true
}
