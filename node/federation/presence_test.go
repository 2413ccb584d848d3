package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func beatMessage(author, from peer.ID, data string) *pubsub.Message {
	topic := lmosproto.TopicPresence
	return &pubsub.Message{
		Message:      &pubsubpb.Message{Data: []byte(data), From: []byte(author), Topic: &topic},
		ReceivedFrom: from,
	}
}

// TestPresenceValidator: what the presence validator answers, and that an
// accepted beat dates the sighting of its author at its own time.
func TestPresenceValidator(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil) // a publisher whose Thing self holds
	bob := newMember(t, nil)   // a peer self holds nothing of
	now := self.clock.Now()
	id := uniqueID()
	if _, err := self.dir.Put(sign(t, alice.key, testTD(t, id, 1, "a"), now.Add(-time.Hour)), nil); err != nil {
		t.Fatal(err)
	}
	beat := func(p peer.ID, at time.Time) string {
		return fmt.Sprintf(`{"peer":%q,"at":%q}`, p.String(), at.UTC().Format(time.RFC3339Nano))
	}
	for _, step := range []struct {
		name string
		msg  *pubsub.Message
		want pubsub.ValidationResult
		is   error
	}{
		{"oversized", beatMessage(alice.id, alice.id, beat(alice.id, now)+strings.Repeat(" ", MaxPresenceSize)), pubsub.ValidationReject, lmosdht.ErrTooLarge},
		{"not JSON", beatMessage(alice.id, alice.id, "beat"), pubsub.ValidationReject, nil},
		{"names another peer", beatMessage(bob.id, bob.id, beat(alice.id, now)), pubsub.ValidationReject, errNotAuthor},
		{"too old", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(-MaxPresenceAge-time.Second))), pubsub.ValidationIgnore, errStaleBeat},
		{"from the future", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(lmosdht.MaxClockSkew+time.Minute))), pubsub.ValidationIgnore, errStaleBeat},
		{"of a peer with no Thing held", beatMessage(bob.id, bob.id, beat(bob.id, now)), pubsub.ValidationIgnore, nil},
		{"own", beatMessage(self.id, self.id, beat(self.id, now)), pubsub.ValidationAccept, nil},
		{"relayed beat of a publisher", beatMessage(alice.id, bob.id, beat(alice.id, now.Add(-time.Minute))), pubsub.ValidationAccept, nil},
	} {
		got, err := self.checkPresence(step.msg)
		if got != step.want {
			t.Errorf("%s: %s (%v), want %s", step.name, topicval.ResultName(got), err, topicval.ResultName(step.want))
			continue
		}
		if step.is != nil && !errors.Is(err, step.is) {
			t.Errorf("%s: error %v does not wrap %v", step.name, err, step.is)
		}
	}
	e, _ := self.dir.Get(alice.id, id)
	if want := now.Add(-time.Minute); !e.LastSeen.Equal(want) || !e.Online {
		t.Errorf("after the beat: last seen %s, online %v; want %s, online", e.LastSeen, e.Online, want)
	}
}

// TestSlowBeats: a beat that states a slower pace keeps its author online
// for beatsPerWindow such paces, past the directory's OfflineAfter; the
// stated pace counts up to MaxBeatEvery; a beat at the usual pace brings
// OfflineAfter back.
func TestSlowBeats(t *testing.T) {
	self := newMember(t, nil)
	alice := newMember(t, nil)
	id := uniqueID()
	if _, err := self.dir.Put(sign(t, alice.key, testTD(t, id, 1, "a"), self.clock.Now().Add(-time.Hour)), nil); err != nil {
		t.Fatal(err)
	}
	beat := func(every float64) {
		t.Helper()
		data := fmt.Sprintf(`{"peer":%q,"at":%q,"every":%g}`, alice.id, self.clock.Now().UTC().Format(time.RFC3339Nano), every)
		if got, err := self.checkPresence(beatMessage(alice.id, alice.id, data)); got != pubsub.ValidationAccept {
			t.Fatalf("beat every %gs: %s (%v)", every, topicval.ResultName(got), err)
		}
	}
	online := func() bool {
		e, _ := self.dir.Get(alice.id, id)
		return e.Online
	}
	offline := directory.DefaultOfflineAfter
	for _, step := range []struct {
		every   float64 // the pace the beat states, in seconds; 0: none
		later   time.Duration
		want    bool
		comment string
	}{
		{0, offline - time.Second, true, "usual pace, within OfflineAfter"},
		{0, offline + time.Second, false, "usual pace, past OfflineAfter"},
		{300, beatsPerWindow*300*time.Second - time.Second, true, "five-minute pace, within five paces"},
		{300, beatsPerWindow*300*time.Second + time.Second, false, "five-minute pace, past five paces"},
		{86400, beatsPerWindow*MaxBeatEvery + time.Second, false, "a day's pace counts as MaxBeatEvery"},
		{300, time.Minute, true, "slow"},
		{0, offline + time.Second, false, "back to the usual pace"},
	} {
		beat(step.every)
		self.clock.Add(step.later)
		if got := online(); got != step.want {
			t.Errorf("%s: online %v, want %v", step.comment, got, step.want)
		}
	}
}

// TestBeatPace: a node of a small federation beats at the usual pace; one
// that hears more beats than it wants slows, by at most a factor of two at
// a time, up to MaxBeatSlowdown; and it speeds up again as it hears fewer.
func TestBeatPace(t *testing.T) {
	base := time.Minute
	for _, c := range []struct {
		every time.Duration
		heard int64
		want  time.Duration
	}{
		{base, 20, base},                          // 20 nodes: a third of a beat a second
		{base, 90, 90 * time.Second},              // 1.5 a second
		{base, 6000, 2 * base},                    // 100 a second: at most twice as slow at once
		{8 * base, 48000, MaxBeatSlowdown * base}, // 100 a second at 8 min: capped
		{10 * base, 300, 5 * base},                // half a beat a second: at most twice as fast
		{2 * base, 0, base},                       // silence: the usual pace
	} {
		if got := beatPace(c.every, base, c.heard, c.every, 1); got != c.want {
			t.Errorf("at %s, %d heard: %s, want %s", c.every, c.heard, got, c.want)
		}
	}
	// Every node paces alike: the beats a node hears converge to the rate
	// it wants, whatever the number of nodes.
	for _, nodes := range []int{100, 10_000} {
		every := base
		var rate float64
		for range 20 {
			// In one pace a node hears every other node once.
			rate = float64(nodes) / every.Seconds()
			every = beatPace(every, base, int64(nodes), every, 1)
		}
		t.Logf("%d nodes: beats every %s, each node hears %.2f a second", nodes, every, rate)
		if nodes == 100 && (every < 90*time.Second || every > 110*time.Second) {
			t.Errorf("100 nodes: every %s, want about 100 s", every)
		}
		if nodes == 10_000 && every != MaxBeatSlowdown*base {
			t.Errorf("10000 nodes: every %s, want the cap", every)
		}
	}
}

// TestBeatsSlowDown: a node that hears more beats than it wants slows its
// own, and says so in them.
func TestBeatsSlowDown(t *testing.T) {
	const interval = 50 * time.Millisecond
	newPaced := func(rate float64) *member {
		return newMember(t, func(d *Deps, c *Config) {
			shardConfig(t, RoleV1, 0)(d, c)
			c.PresenceInterval, c.BeatRate = interval, rate
		})
	}
	slow, fast := newPaced(0.5), newPaced(1000) // slow wants half a beat a second, and hears 20
	for _, m := range []*member{slow, fast} {
		if _, _, err := m.Publish(context.Background(), testTD(t, uniqueID(), 1, capA), nil); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := fast.presence.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()
	connect(t, slow, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no beat of the slowed node at its slowest pace: %v", err)
		}
		var b presence
		if err := json.Unmarshal(msg.GetData(), &b); err != nil {
			t.Fatal(err)
		}
		if b.Peer == fast.id.String() && b.Every != 0 {
			t.Fatalf("the node that wants 1000 beats a second slowed: every %gs", b.Every)
		}
		if b.Peer == slow.id.String() && b.Every == (MaxBeatSlowdown*interval).Seconds() {
			return
		}
	}
}

// TestAnnounceOverQuota: an announcement that would take its publisher
// over the directory's quota is rejected (it counts against the sender);
// what is held stays, and an update of a held Thing is still accepted.
func TestAnnounceOverQuota(t *testing.T) {
	var dir *directory.Directory
	self := newMember(t, func(d *Deps, _ *Config) {
		var err error
		dir, err = directory.Open(directory.Deps{Datastore: dssync.MutexWrap(ds.NewMapDatastore()), Self: d.Host.ID()}, directory.Config{MaxThingsPerPublisher: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		d.Directory = dir
	})
	alice := newMember(t, nil)
	now := time.Now()
	ids := []string{uniqueID(), uniqueID(), uniqueID()}
	for i, step := range []struct {
		rec  *lmosproto.Record
		want pubsub.ValidationResult
	}{
		{sign(t, alice.key, testTD(t, ids[0], 1, "a"), now), pubsub.ValidationAccept},
		{sign(t, alice.key, testTD(t, ids[1], 1, "a"), now), pubsub.ValidationAccept},
		{sign(t, alice.key, testTD(t, ids[2], 1, "a"), now), pubsub.ValidationReject},
		{sign(t, alice.key, testTD(t, ids[0], 2, "a"), now), pubsub.ValidationAccept},
	} {
		got, err := self.checkAnnounce(message(alice.id, alice.id, step.rec.Raw))
		if got != step.want {
			t.Errorf("step %d: %s (%v), want %s", i, topicval.ResultName(got), err, topicval.ResultName(step.want))
		}
		if got == pubsub.ValidationReject && !errors.Is(err, directory.ErrQuota) {
			t.Errorf("step %d: %v does not wrap directory.ErrQuota", i, err)
		}
	}
	self.learn.flush() // what the learn queue's worker does next
	if n, _ := dir.Usage(alice.id); n != 2 {
		t.Errorf("held %d Things of alice, want 2", n)
	}
	if _, ok := dir.Get(alice.id, ids[2]); ok {
		t.Error("the Thing over quota is held")
	}
}
