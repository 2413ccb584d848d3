package federation

import (
	"context"
	"slices"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestCatchUpLatePeer: a peer that comes onto an announce topic a moment
// after an announcement (gossipsub did not list it when the announcement
// went out, and grafts it into its mesh, where no IHAVE gossip reaches it)
// gets the Thing by gossip: on the v1 topic, and on a shard, in full and
// short. Nothing else brings it: it does not sync, nor look up.
func TestCatchUpLatePeer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		topic string
	}{
		{"v1 topic", Config{}, lmosproto.TopicAnnounce},
		{"shard, in full", Config{Role: RoleDirectory, NoLegacyAnnounce: true}, ""},
		{"shard, short", Config{Role: RoleDirectory, NoLegacyAnnounce: true, ShortBudget: -1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			topic := tc.topic
			if topic == "" {
				topic = lmosproto.ShardTopic(shardOfCap(capA))
			}
			pub, witness, late := newGossipPeer(t), newGossipPeer(t), newGossipPeer(t)
			hears := func(dir *directory.Directory, id string) func() bool {
				return func() bool { e, ok := dir.Latest(pub.host.ID(), id); return ok && !e.Tombstone }
			}
			fpub, _ := federateInMemory(t, pub, tc.cfg)
			_, witnessDir := federateInMemory(t, witness, tc.cfg)
			linkGossip(t, pub, witness)
			waitFor(t, "the witness on the publisher's topic", func() bool { return len(pub.ps.ListPeers(topic)) == 1 })
			// Connected, but not on the topic yet.
			linkGossip(t, pub, late)
			id := uniqueID()
			if _, _, err := fpub.Publish(ctx, testTD(t, id, 1, capA), nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the witness to hear the Thing", hears(witnessDir, id))

			_, lateDir := federateInMemory(t, late, tc.cfg)
			waitFor(t, "the late peer to hear the Thing", hears(lateDir, id))
		})
	}
}

// TestSentLog: the announcements remembered for catching up are those of
// the last catchUpWindow, at most maxSent; announcements made while a
// topic's peers stay the same share one listing, which tells a new peer
// from the ones it lists.
func TestSentLog(t *testing.T) {
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	topic := new(pubsub.Topic)
	var s sentLog
	now := time.Now()
	note := func(at time.Time, peers ...peer.ID) *sentOn {
		s.prune(at)
		e := &sentOn{topic: topic, at: at, to: s.listed(topic, peers)}
		s.entries = append(s.entries, e)
		return e
	}
	first := note(now, a, b)
	second := note(now.Add(time.Second), b, a)
	if first.to != second.to {
		t.Error("the same peers in another order: a new listing")
	}
	third := note(now.Add(2*time.Second), a)
	if third.to == second.to {
		t.Error("fewer peers: the same listing")
	}
	if got := second.to.newOn([]peer.ID{b, a}); got != nil {
		t.Errorf("new on the same peers: %v", got)
	}
	if got := second.to.newOn([]peer.ID{a, c}); !slices.Equal(got, []peer.ID{c}) {
		t.Errorf("new on a and c: %v, want c", got)
	}
	s.prune(now.Add(catchUpWindow + 1500*time.Millisecond))
	if len(s.entries) != 1 || s.entries[0] != third {
		t.Errorf("after the window of two: %d entries, want the third", len(s.entries))
	}
	s.prune(now.Add(catchUpWindow + 3*time.Second))
	if len(s.entries) != 0 || s.last != nil {
		t.Errorf("after the window: %d entries, listings %v", len(s.entries), s.last)
	}
	for i := range maxSent + 10 {
		note(now.Add(time.Duration(i)*time.Microsecond), a)
	}
	s.prune(now)
	if len(s.entries) != maxSent || !s.entries[0].at.Equal(now.Add(10*time.Microsecond)) {
		t.Errorf("past maxSent: %d entries from %v, want %d from the 11th", len(s.entries), s.entries[0].at.Sub(now), maxSent)
	}
}

// TestCatchUpBounded: an announcement goes out again for at most
// maxCatchUps peers that come late, so that peers coming and going cannot
// make a publisher flood it without end.
func TestCatchUpBounded(t *testing.T) {
	ctx := context.Background()
	pub, witness := newGossipPeer(t), newGossipPeer(t)
	fpub, _ := federateInMemory(t, pub, Config{})
	federateInMemory(t, witness, Config{})
	linkGossip(t, pub, witness)
	waitFor(t, "the witness on the publisher's topic", func() bool { return len(pub.ps.ListPeers(lmosproto.TopicAnnounce)) == 1 })
	// Connected before the announcement, each on the topic after it.
	lates := make([]gossipPeer, maxCatchUps+1)
	for i := range lates {
		lates[i] = newGossipPeer(t)
		linkGossip(t, pub, lates[i])
	}
	id := uniqueID()
	if _, _, err := fpub.Publish(ctx, testTD(t, id, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	for i, late := range lates {
		_, dir := federateInMemory(t, late, Config{})
		hears := func() bool { e, ok := dir.Latest(pub.host.ID(), id); return ok && !e.Tombstone }
		if i < maxCatchUps {
			waitFor(t, "a late peer to hear the Thing", hears)
			continue
		}
		// Ten polls: a catch-up comes within one or two.
		time.Sleep(10 * catchUpPoll)
		if hears() {
			t.Errorf("late peer %d heard the Thing: more than %d catch-ups", i+1, maxCatchUps)
		}
	}
}

// federateInMemory starts a Federation configured by cfg with gossip on p
// and an in-memory directory, both closed when the test ends.
func federateInMemory(t *testing.T, p gossipPeer, cfg Config) (*Federation, *directory.Directory) {
	f, dir := p.federate(t, dssync.MutexWrap(ds.NewMapDatastore()), cfg)
	t.Cleanup(func() { f.Close(); dir.Close() })
	return f, dir
}

// linkGossip connects a to b.
func linkGossip(t *testing.T, a, b gossipPeer) {
	t.Helper()
	if err := a.host.Connect(context.Background(), peer.AddrInfo{ID: b.host.ID(), Addrs: b.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpConnectedLongBefore: a peer that connected after the
// announcement is not caught up (nothing it missed was on its way). A
// peer connected for longer than the window is caught up only if it comes
// onto the topic within the slack of the announcement (its subscription
// could have been on its way), not later (it joined the topic after the
// announcement: a node that joins a shard to publish there must not make
// every publisher of the shard announce its last seconds again). A peer
// that connected just before the announcement is caught up when it comes
// later than the slack.
func TestCatchUpConnectedLongBefore(t *testing.T) {
	const window, slack = 8 * time.Second, 3 * time.Second
	ctx := context.Background()
	pub, witness, soon, late, fresh, after := newGossipPeer(t), newGossipPeer(t), newGossipPeer(t), newGossipPeer(t), newGossipPeer(t), newGossipPeer(t)
	fpub, _ := federateInMemory(t, pub, Config{})
	fpub.pubMu.Lock()
	fpub.sent.window, fpub.sent.slack = window, slack
	fpub.pubMu.Unlock()
	federateInMemory(t, witness, Config{})
	linkGossip(t, pub, witness)
	linkGossip(t, pub, soon)
	linkGossip(t, pub, late)
	waitFor(t, "the witness on the publisher's topic", func() bool { return len(pub.ps.ListPeers(lmosproto.TopicAnnounce)) == 1 })
	time.Sleep(window + 500*time.Millisecond) // the connections are old
	linkGossip(t, pub, fresh)
	id := uniqueID()
	published := time.Now()
	if _, _, err := fpub.Publish(ctx, testTD(t, id, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	hears := func(dir *directory.Directory) func() bool {
		return func() bool { e, ok := dir.Latest(pub.host.ID(), id); return ok && !e.Tombstone }
	}
	// A catch-up for any peer reaches every peer on the topic: each peer
	// that must not be caught up is checked before the next that must.
	linkGossip(t, pub, after)
	_, afterDir := federateInMemory(t, after, Config{})
	time.Sleep(time.Second)
	if hears(afterDir)() {
		t.Error("a peer connected after the announcement was caught up")
	}
	_, soonDir := federateInMemory(t, soon, Config{})
	waitFor(t, "the peer that came within the slack to hear the Thing", hears(soonDir))
	time.Sleep(time.Until(published.Add(slack + 500*time.Millisecond)))
	_, lateDir := federateInMemory(t, late, Config{})
	time.Sleep(1500 * time.Millisecond) // a catch-up comes within a poll or two
	if hears(lateDir)() {
		t.Error("a peer connected long before, on the topic after the slack, was caught up")
	}
	// The announcement is remembered until the window ends, ~3 s on.
	_, freshDir := federateInMemory(t, fresh, Config{})
	waitFor(t, "the peer that connected just before to hear the Thing", hears(freshDir))
}
