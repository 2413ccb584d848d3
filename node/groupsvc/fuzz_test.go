package groupsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pubsubpb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/topicval"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// fuzzAuthors are the authors a fuzzed message may have: the fixture's
// peers and an invalid (empty) one.
func (f *topicFixture) fuzzAuthors() []peer.ID {
	out := make([]peer.ID, 0, len(actorNames)+1)
	for _, name := range actorNames {
		out = append(out, f.actors[name].id)
	}
	return append(out, "")
}

// FuzzTopicMessage feeds arbitrary messages to the validator of a group
// topic (Service.check). It never panics; it accepts exactly the messages
// it gives no error for; what it accepts is well-formed and allowed: a post
// of an author that may post, which encodes again to the same post; an
// operation that is now in the log or held, whose canonical form parses to
// the same operation; a Thing record of a member. The seeds are the golden
// inputs of testdata/topic.
func FuzzTopicMessage(f *testing.F) {
	fx := newTopicFixture(f)
	authors := fx.fuzzAuthors()
	inputs := readTopicInputs(f)
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		in := inputs[name]
		i := slices.Index(authors, fx.author(f, in.From))
		f.Add(fx.resolve(f, in), uint8(i), in.Local)
	}
	f.Fuzz(func(t *testing.T, data []byte, who uint8, local bool) {
		from := authors[int(who)%len(authors)]
		g := fx.group(t)
		st := g.state()
		pending := g.log.Pending()
		msg := fx.message(data, from, local)
		res, err := fx.svc.check(context.Background(), g, msg)
		switch res {
		case pubsub.ValidationAccept:
			if err != nil {
				t.Fatalf("accepted with an error: %v", err)
			}
		case pubsub.ValidationReject, pubsub.ValidationIgnore:
			if err == nil {
				t.Fatalf("%s without an error", topicval.ResultName(res))
			}
			if msg.ValidatorData != nil {
				t.Fatalf("%s, yet delivers %v", topicval.ResultName(res), msg.ValidatorData)
			}
			return
		default:
			t.Fatalf("result %s", topicval.ResultName(res))
		}
		m, err := groups.ParseMessage(data)
		if err != nil {
			t.Fatalf("accepted a message that does not parse: %v", err)
		}
		switch {
		case m.Post != nil:
			r, ok := msg.ValidatorData.(*Received)
			if !ok || r.From != from || !st.CanPost(from) {
				t.Fatalf("accepted post: delivered %v from %s (may post: %v)", msg.ValidatorData, from, st.CanPost(from))
			}
			again, err := json.Marshal(groups.Message{Post: &groups.Post{Body: r.Body, Sent: r.Sent}})
			if err != nil {
				t.Fatal(err)
			}
			m2, err := groups.ParseMessage(again)
			if err != nil || !bytes.Equal(m2.Post.Body, r.Body) || !m2.Post.Sent.Equal(r.Sent) {
				t.Fatalf("the delivered post does not encode again to itself: %s: %v", again, err)
			}
		case m.Op != nil:
			op, err := groups.ParseOp(m.Op)
			if err != nil {
				t.Fatalf("accepted an operation that does not parse: %v", err)
			}
			again, err := groups.ParseOp(op.Raw)
			if err != nil || again.ID != op.ID {
				t.Fatalf("the operation's canonical form does not parse to it: %v", err)
			}
			if !g.log.Has(op.ID) && g.log.Pending() <= pending {
				t.Fatalf("accepted operation %s is neither in the log nor held", op.ID)
			}
		case m.Thing != nil:
			if !st.IsMember(from) {
				t.Fatalf("accepted a Thing record of %s, not a member", from)
			}
			if msg.ValidatorData != nil {
				t.Fatalf("a Thing record delivers %v", msg.ValidatorData)
			}
		}
	})
}

// FuzzSubscriptionFilter feeds arbitrary topic names to the gossipsub
// filters of group topics (SubscriptionFilter, PeerFilter). They never
// panic; the subscription filter keeps the other subscriptions in order,
// every unsubscription and every topic that is not a group topic, keeps a
// subscription to the fixture group's topic exactly when the peer is a
// member, drops (and remembers) one to an unknown group's topic; the peer
// filter agrees with it.
func FuzzSubscriptionFilter(f *testing.F) {
	fx := newTopicFixture(f)
	g := fx.group(f)
	if _, _, err := fx.svc.adopt(g.log); err != nil {
		f.Fatal(err)
	}
	st := g.state()
	authors := fx.fuzzAuthors()
	own := groups.Topic(fx.groupID)
	for _, topic := range []string{own, groups.Topic(fx.ops["unsent"].ID), lmosproto.TopicGroupPrefix, own + "/x", "/lmos/1/announce", ""} {
		for i := range authors {
			f.Add(topic, true, uint8(i))
		}
		f.Add(topic, false, uint8(0))
	}
	filter := fx.svc.SubscriptionFilter()
	f.Fuzz(func(t *testing.T, topic string, subscribe bool, who uint8) {
		from := authors[int(who)%len(authors)]
		before, after := "/lmos/1/announce", groups.Topic(fx.groupID)
		yes, no := true, false
		subs := []*pubsubpb.RPC_SubOpts{
			{Subscribe: &yes, Topicid: &before},
			{Subscribe: &subscribe, Topicid: &topic},
			{Subscribe: &no, Topicid: &after},
		}
		out, err := filter.FilterIncomingSubscriptions(from, slices.Clone(subs))
		if err != nil {
			t.Fatal(err)
		}
		_, isGroup := strings.CutPrefix(topic, lmosproto.TopicGroupPrefix)
		admitted := !isGroup || (topic == own && st.IsMember(from))
		want := []*pubsubpb.RPC_SubOpts{subs[0], subs[1], subs[2]}
		if subscribe && !admitted {
			want = []*pubsubpb.RPC_SubOpts{subs[0], subs[2]}
			if !fx.svc.wasDropped(topic, from) {
				t.Errorf("the dropped subscription of %s to %q is not remembered", from, topic)
			}
		}
		if !slices.Equal(out, want) {
			t.Errorf("subscription of %s to %q (subscribe %v): kept %v, want %v", from, topic, subscribe, out, want)
		}
		if got := fx.svc.PeerFilter(from, topic); got != admitted {
			t.Errorf("PeerFilter(%s, %q) = %v, want %v", from, topic, got, admitted)
		}
	})
}
