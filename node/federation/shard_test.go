package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Capabilities in distinct shards (proto.TestShardOf): a in 14, b in 11.
const (
	capA = "a"
	capB = "b"
)

func shardOfCap(c string) int { return lmosproto.ShardOf(lmosproto.ProvideCapability + c) }

// newShardMember is a member with gossipsub and the given role; budget
// is its Config.ShortBudget (0: the default).
func newShardMember(t *testing.T, role Role, budget int) *member {
	t.Helper()
	return newMember(t, shardConfig(t, role, budget))
}

// shardConfig configures newMember as newShardMember does.
func shardConfig(t *testing.T, role Role, budget int) func(*Deps, *Config) {
	return func(d *Deps, c *Config) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ps, err := pubsub.NewGossipSub(ctx, d.Host, pubsub.WithFloodPublish(true), pubsub.WithMessageSignaturePolicy(pubsub.StrictSign))
		if err != nil {
			t.Fatal(err)
		}
		d.PubSub = ps
		c.Role = role
		c.ShortBudget = budget
		c.SyncOnConnect = true // a light node ignores it
	}
}

// subscribed waits until m knows that each of peers is subscribed to
// topic.
func subscribed(t *testing.T, m *member, topic string, peers ...*member) {
	t.Helper()
	waitFor(t, "subscriptions to "+topic, func() bool {
		got := m.p.PubSub.ListPeers(topic)
		for _, p := range peers {
			if !slices.Contains(got, p.id) {
				return false
			}
		}
		return true
	})
}

func holds(m *member, publisher peer.ID, id string) bool {
	e, ok := m.dir.Latest(publisher, id)
	return ok && !e.Tombstone
}

// TestShardJoinLeave: a light node joins the shards of what it publishes
// and looks up, leaves a looked-up one after ShardIdle without lookups,
// never the shards of its own Things; a directory node joins every shard
// and leaves none.
func TestShardJoinLeave(t *testing.T) {
	ctx := context.Background()
	light := newShardMember(t, RoleLight, 0)
	if got := light.Shards(); len(got) != 0 {
		t.Fatalf("a fresh light node is in shards %v", got)
	}
	if _, _, err := light.Publish(ctx, testTD(t, uniqueID(), 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := light.FindCapability(ctx, capB); err != nil {
		t.Fatal(err)
	}
	want := []int{shardOfCap(capB), shardOfCap(capA)}
	slices.Sort(want)
	if got := light.Shards(); !slices.Equal(got, want) {
		t.Fatalf("shards %v, want %v (own Thing's, looked up)", got, want)
	}
	light.clock.Add(ShardIdle - time.Second)
	light.sweepShards()
	if got := light.Shards(); !slices.Equal(got, want) {
		t.Fatalf("shards %v before ShardIdle, want %v", got, want)
	}
	light.clock.Add(2 * time.Second)
	light.sweepShards()
	if got := light.Shards(); !slices.Equal(got, []int{shardOfCap(capA)}) {
		t.Fatalf("shards %v after ShardIdle, want only the own Thing's %d", got, shardOfCap(capA))
	}

	dir := newShardMember(t, RoleDirectory, 0)
	dir.clock.Add(2 * ShardIdle)
	dir.sweepShards()
	if got := dir.Shards(); len(got) != lmosproto.ShardCount {
		t.Fatalf("a directory node is in shards %v, want all %d", got, lmosproto.ShardCount)
	}
	if v1 := newShardMember(t, RoleV1, 0); len(v1.Shards()) != 0 {
		t.Fatalf("a v1 node is in shards %v", v1.Shards())
	}
}

// shardNet is a publisher, a light node that looked up capA, a light node
// that joined nothing and a directory node, all connected to each other.
type shardNet struct {
	pub, user, idle, dir *member
}

func newShardNet(t *testing.T, budget int) shardNet {
	t.Helper()
	n := shardNet{
		pub:  newShardMember(t, RoleLight, budget),
		user: newShardMember(t, RoleLight, 0),
		idle: newShardMember(t, RoleLight, 0),
		dir:  newShardMember(t, RoleDirectory, 0),
	}
	all := []*member{n.pub, n.user, n.idle, n.dir}
	for i, a := range all {
		for _, b := range all[i+1:] {
			connect(t, a, b)
		}
	}
	if _, err := n.user.FindCapability(context.Background(), capA); err != nil {
		t.Fatal(err)
	}
	subscribed(t, n.pub, lmosproto.ShardTopic(shardOfCap(capA)), n.user, n.dir)
	return n
}

// TestShardPropagation: a record announced in full on its shard reaches
// the nodes in that shard (the light node that looked up its capability,
// the directory node) and not a light node that never joined it.
func TestShardPropagation(t *testing.T) {
	n := newShardNet(t, 0)
	id := uniqueID()
	if _, _, err := n.pub.Publish(context.Background(), testTD(t, id, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shard's nodes to hold the Thing", func() bool {
		return holds(n.user, n.pub.id, id) && holds(n.dir, n.pub.id, id)
	})
	time.Sleep(500 * time.Millisecond) // what could still reach the idle node
	if holds(n.idle, n.pub.id, id) {
		t.Fatal("a light node holds a Thing of a shard it never joined")
	}
	if got := n.idle.dir.Len(); got != 0 {
		t.Fatalf("the idle light node holds %d Things", got)
	}
}

// sameShardCap returns a capability other than c on c's shard.
func sameShardCap(t *testing.T, c string) string {
	t.Helper()
	for i := range 10_000 {
		if o := fmt.Sprintf("mate-%d", i); shardOfCap(o) == shardOfCap(c) {
			return o
		}
	}
	t.Fatal("no capability shares the shard")
	return ""
}

// TestLightKeepsWhatItUses: of the Things its shard brings, a light node
// stores those of a capability it looked up and those of its own
// Things' capabilities, not another capability's that shares the shard
// (its validator accepts that record, so gossipsub relays it); the
// directory node stores all.
func TestLightKeepsWhatItUses(t *testing.T) {
	ctx := context.Background()
	mate := sameShardCap(t, capA)
	n := newShardNet(t, 0) // n.user looked capA up
	used, other := uniqueID(), uniqueID()
	if _, _, err := n.pub.Publish(ctx, testTD(t, other, 1, mate), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.pub.Publish(ctx, testTD(t, used, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the directory node to hold both Things and the light node the one it uses", func() bool {
		return holds(n.dir, n.pub.id, used) && holds(n.dir, n.pub.id, other) && holds(n.user, n.pub.id, used)
	})
	if holds(n.user, n.pub.id, other) {
		t.Fatalf("the light node holds a Thing of %q, which shares the shard of %q and which it never used", mate, capA)
	}
	rec, ok := n.dir.dir.Latest(n.pub.id, other)
	if !ok {
		t.Fatal("the directory node lost the Thing")
	}
	raw, err := rec.Raw()
	if err != nil {
		t.Fatal(err)
	}
	shard := shardOfCap(capA)
	if got, err := n.user.checkShard(shard)(shardMessageFrom(n.pub.id, shard, raw)); got != pubsub.ValidationAccept {
		t.Fatalf("the light node's validator on the Thing it does not keep: %s (%v), want accept (relay)", topicval.ResultName(got), err)
	}
	// Its own Things make it use their capabilities, not their type
	// (every Thing here has the same).
	if _, _, err := n.user.Publish(ctx, testTD(t, uniqueID(), 1, capB), nil); err != nil {
		t.Fatal(err)
	}
	n.user.sweepShards()
	if got, err := n.user.checkShard(shard)(shardMessageFrom(n.pub.id, shard, raw)); got != pubsub.ValidationAccept {
		t.Fatalf("the light node's validator: %s (%v), want accept", topicval.ResultName(got), err)
	}
	time.Sleep(300 * time.Millisecond) // what it admits is stored in batches
	if holds(n.user, n.pub.id, other) {
		t.Fatalf("after publishing a Thing of another capability, the light node kept the Thing of %q", mate)
	}
	// Its own Thing of the mate capability makes it use that capability.
	if _, _, err := n.user.Publish(ctx, testTD(t, uniqueID(), 1, mate), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.pub.Publish(ctx, testTD(t, other, 2, mate), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the light node to hold a Thing of its own Thing's capability", func() bool { return holds(n.user, n.pub.id, other) })
}

// TestAutoLight: a RoleAuto node holds every Thing, as a directory node,
// until what it learned passes LightPast; then it is light: it leaves the
// shards it neither publishes in nor looked up in, stops relaying the v1
// topics, and of its shards stores only the Things of what it uses.
func TestAutoLight(t *testing.T) {
	ctx := context.Background()
	pub := newShardMember(t, RoleDirectory, 0)
	auto := newMember(t, func(d *Deps, c *Config) {
		shardConfig(t, RoleAuto, 0)(d, c)
		c.LightPast = 1 // the first record learned
	})
	connect(t, pub, auto)
	first := uniqueID()
	if _, _, err := pub.Publish(ctx, testTD(t, first, 1, capB), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the auto node to hold a Thing of a capability it never used", func() bool { return holds(auto, pub.id, first) })
	if got := auto.role(); got != RoleDirectory {
		t.Fatalf("before: role %q", got)
	}
	if got := len(auto.Shards()); got != lmosproto.ShardCount {
		t.Fatalf("before: %d shards joined, want all %d", got, lmosproto.ShardCount)
	}
	auto.useShard(lmosproto.ProvideCapability + capA) // it looked capA up
	auto.autoLight()
	if got := auto.role(); got != RoleLight {
		t.Fatalf("after: role %q", got)
	}
	if got, want := auto.Shards(), []int{shardOfCap(capA)}; !slices.Equal(got, want) {
		t.Fatalf("after: shards %v, want %v (the one it looked up in)", got, want)
	}
	if auto.relay != nil || auto.prRelay != nil {
		t.Fatal("after: still relaying the v1 topics")
	}
	// The publisher no longer sends it capB's shard or the v1 topic.
	waitFor(t, "the publisher to see the auto node leave", func() bool {
		return !slices.Contains(pub.p.PubSub.ListPeers(lmosproto.ShardTopic(shardOfCap(capB))), auto.id) &&
			!slices.Contains(pub.p.PubSub.ListPeers(lmosproto.TopicAnnounce), auto.id)
	})
	unused, used := uniqueID(), uniqueID()
	if _, _, err := pub.Publish(ctx, testTD(t, unused, 1, capB), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pub.Publish(ctx, testTD(t, used, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the light node to hold the Thing it uses", func() bool { return holds(auto, pub.id, used) })
	time.Sleep(300 * time.Millisecond) // what it admits is stored in batches
	if holds(auto, pub.id, unused) {
		t.Fatal("after: the node holds a Thing of a capability it does not use")
	}
}

// TestShortAnnouncementFetch: a record over the budget is announced short;
// the light node in its shard notes it, holds nothing, and fetches and
// verifies the TD when a lookup needs it; the directory node fetches it at
// once; a fetch that brings another version than the one announced is
// refused.
func TestShortAnnouncementFetch(t *testing.T) {
	ctx := context.Background()
	n := newShardNet(t, -1) // every TD short
	id := uniqueID()
	if _, _, err := n.pub.Publish(ctx, testTD(t, id, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the short announcement", func() bool { return n.user.shorts.Len() == 1 })
	if holds(n.user, n.pub.id, id) {
		t.Fatal("the light node holds the Thing before any query")
	}
	waitFor(t, "the directory node to fetch the Thing", func() bool { return holds(n.dir, n.pub.id, id) })
	if n.dir.shorts.Len() != 0 {
		t.Fatalf("the directory node keeps %d short announcements after fetching", n.dir.shorts.Len())
	}

	// A forged hash or a later seq than the publisher has: refused.
	ref := thingRef{n.pub.id, id}
	s, _ := n.user.shorts.get(ref)
	for name, bad := range map[string]shortAnnouncement{
		"other hash": {Publisher: s.Publisher, ID: id, Seq: s.Seq, Hash: recordHash([]byte("x")), Keys: s.Keys},
		"later seq":  {Publisher: s.Publisher, ID: id, Seq: s.Seq + 1, Hash: s.Hash, Keys: s.Keys},
	} {
		if err := n.user.fetchShort(ctx, ref, bad); err == nil {
			t.Errorf("%s: fetched", name)
		}
		if holds(n.user, n.pub.id, id) {
			t.Fatalf("%s: stored", name)
		}
	}

	got, err := n.user.FindCapability(ctx, capA)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ThingID != id || got[0].Publisher != n.pub.id {
		t.Fatalf("lookup found %v, want the Thing announced short", got)
	}
	if n.user.shorts.Len() != 0 {
		t.Fatal("the short announcement is still noted after the fetch")
	}
	if holds(n.idle, n.pub.id, id) || n.idle.shorts.Len() != 0 {
		t.Fatal("a light node outside the shard heard of the Thing")
	}
}

func shardMessageFrom(author peer.ID, topic int, data []byte) *pubsub.Message {
	name := lmosproto.ShardTopic(topic)
	return &pubsub.Message{Message: &pubsubpb.Message{Data: data, From: []byte(author), Topic: &name}, ReceivedFrom: author}
}

// TestShardValidator: what a shard's validator refuses.
func TestShardValidator(t *testing.T) {
	self := newShardMember(t, RoleLight, 0)
	self.useShard(lmosproto.ProvideCapability + capA) // it looked capA up
	alice := newMember(t, nil)
	id := uniqueID()
	rec := sign(t, alice.key, testTD(t, id, 1, capA), self.clock.Now())
	short := func(s shortAnnouncement) []byte {
		b, err := json.Marshal(shardMessage{Short: &s})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := shortAnnouncement{Publisher: alice.id.String(), ID: id, Seq: 1, Hash: recordHash(rec.Raw), Keys: tdForms(rec.TD)}
	other := good
	other.Publisher = self.id.String()
	badHash := good
	badHash.Hash = "ABC"
	beat := func(p peer.ID) []byte {
		b, err := json.Marshal(shardMessage{Beat: &presence{Peer: p.String(), At: self.clock.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in, out := shardOfCap(capA), shardOfCap(capB)
	for _, step := range []struct {
		name  string
		shard int
		data  []byte
		want  pubsub.ValidationResult
		is    error
	}{
		{"beat about another peer", in, beat(self.id), pubsub.ValidationReject, errNotAuthor},
		// On a shard, a beat of a publisher held nothing of is relayed
		// (on /lmos/1/presence it is ignored).
		{"beat", out, beat(alice.id), pubsub.ValidationAccept, nil},
		{"record on another shard", out, rec.Raw, pubsub.ValidationReject, errWrongShard},
		{"short on another shard", out, short(good), pubsub.ValidationReject, errWrongShard},
		{"short of another publisher", in, short(other), pubsub.ValidationReject, errNotAuthor},
		{"short with a bad hash", in, short(badHash), pubsub.ValidationReject, errBadShort},
		{"short", in, short(good), pubsub.ValidationAccept, nil},
		{"short again", in, short(good), pubsub.ValidationIgnore, ErrNotNewer},
		{"record", in, rec.Raw, pubsub.ValidationAccept, nil},
	} {
		got, err := self.checkShard(step.shard)(shardMessageFrom(alice.id, step.shard, step.data))
		if got != step.want || step.is != nil && !errors.Is(err, step.is) {
			t.Errorf("%s: %s (%v), want %s (%v)", step.name, topicval.ResultName(got), err, topicval.ResultName(step.want), step.is)
		}
	}
}

// TestShardValidatorRetired: a retired key's short announcements and
// presence beats are rejected as its records are; the node would fetch
// from it, and count it alive, otherwise.
func TestShardValidatorRetired(t *testing.T) {
	alice := newMember(t, nil)
	self := newMember(t, func(d *Deps, c *Config) {
		shardConfig(t, RoleDirectory, 0)(d, c)
		retired := func(p peer.ID) error {
			if p == alice.id {
				return errors.New("rotated away from")
			}
			return nil
		}
		var err error
		d.Intake, err = NewIntake(IntakeDeps{Directory: d.Directory, Self: d.Host.ID(), Validator: lmosdht.ThingValidator{Retired: retired}})
		if err != nil {
			t.Fatal(err)
		}
	})
	id := uniqueID()
	rec := sign(t, alice.key, testTD(t, id, 1, capA), self.clock.Now())
	for _, m := range []shardMessage{
		{Short: &shortAnnouncement{Publisher: alice.id.String(), ID: id, Seq: 1, Hash: recordHash(rec.Raw), Keys: tdForms(rec.TD)}},
		{Beat: &presence{Peer: alice.id.String(), At: self.clock.Now()}},
	} {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		n := shardOfCap(capA)
		if got, err := self.checkShard(n)(shardMessageFrom(alice.id, n, data)); got != pubsub.ValidationReject || !errors.Is(err, lmosdht.ErrRetiredKey) {
			t.Errorf("%s: %s (%v), want reject (%v)", data, topicval.ResultName(got), err, lmosdht.ErrRetiredKey)
		}
	}
	if got, err := self.checkShard(shardOfCap(capA))(shardMessageFrom(alice.id, shardOfCap(capA), rec.Raw)); got != pubsub.ValidationReject || !errors.Is(err, lmosdht.ErrRetiredKey) {
		t.Errorf("record: %s (%v), want reject (%v)", topicval.ResultName(got), err, lmosdht.ErrRetiredKey)
	}
}

// TestMixedVersions: a v1 node (as before the shards: /lmos/1/announce
// only) and sharded nodes federate. The light node's publication reaches
// the v1 node on the v1 topic; the v1 node's reaches the directory node,
// and not the light node, which carries no v1 topic.
func TestMixedVersions(t *testing.T) {
	ctx := context.Background()
	old := newShardMember(t, RoleV1, 0)
	light := newShardMember(t, RoleLight, 0)
	dir := newShardMember(t, RoleDirectory, 0)
	all := []*member{old, light, dir}
	for i, a := range all {
		for _, b := range all[i+1:] {
			connect(t, a, b)
		}
	}
	subscribed(t, light, lmosproto.TopicAnnounce, old, dir)
	subscribed(t, old, lmosproto.TopicAnnounce, dir)

	newID, oldID := uniqueID(), uniqueID()
	if _, _, err := light.Publish(ctx, testTD(t, newID, 1, capA), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Publish(ctx, testTD(t, oldID, 1, capB), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both publications to cross", func() bool {
		return holds(old, light.id, newID) && holds(dir, light.id, newID) && holds(dir, old.id, oldID)
	})
	time.Sleep(500 * time.Millisecond)
	if holds(light, old.id, oldID) {
		t.Fatal("the light node holds the v1 node's Thing of a shard it never joined")
	}
	if slices.Contains(light.p.PubSub.GetTopics(), lmosproto.TopicAnnounce) && slices.Contains(dir.p.PubSub.ListPeers(lmosproto.TopicAnnounce), light.id) {
		t.Fatal("the light node subscribed to the v1 announce topic")
	}
}

// TestLookedBound: a light node remembers at most maxLooked looked-up
// key forms, and a form it remembers is dated again by each lookup even
// when the set is full.
func TestLookedBound(t *testing.T) {
	light := newShardMember(t, RoleLight, 0)
	form := lmosproto.ProvideCapability + capA
	light.useShard(form)
	light.shards.mu.Lock()
	for i := len(light.shards.looked); i < maxLooked; i++ {
		light.shards.looked[fmt.Sprintf("filler-%d", i)] = light.clock.Now()
	}
	light.shards.mu.Unlock()
	light.clock.Add(ShardIdle - time.Second)
	light.useShard(form)
	light.useShard(lmosproto.ProvideCapability + capB) // one too many
	light.clock.Add(2 * time.Second)
	if !light.keeps([]string{form}) {
		t.Error("a form looked up again while the set was full is forgotten")
	}
	if light.keeps([]string{lmosproto.ProvideCapability + capB}) {
		t.Error("a form past the bound is remembered")
	}
	light.shards.mu.Lock()
	defer light.shards.mu.Unlock()
	if n := len(light.shards.looked); n != maxLooked {
		t.Errorf("%d forms remembered, want %d", n, maxLooked)
	}
}
