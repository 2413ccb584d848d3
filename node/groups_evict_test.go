package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// TestGroupRemovalEvicts removes a member that does not cooperate: it
// keeps a raw gossipsub subscription to the group topic. Before the
// removal it receives the members' posts; once the remove operation has
// reached every node, the members have dropped its subscription (they
// closed their connections to it), it is connected to them again, its
// subscription announced on the new connections is refused, and posts by
// the remaining members reach them and never the removed node.
func TestGroupRemovalEvicts(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node test")
	}
	opts := func(int) []node.Option { return []node.Option{node.WithGossipHeartbeat(100 * time.Millisecond)} }
	net := testnet.New(t, 4, testnet.Options{NodeOptions: opts})
	for i := range net.Nodes {
		for j := i + 1; j < len(net.Nodes); j++ {
			net.Link(i, j)
		}
	}
	nodes := net.Nodes
	victim := nodes[3]
	members := nodes[:3]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	info, err := nodes[0].Groups().Create(ctx, "evict", nil)
	if err != nil {
		t.Fatal(err)
	}
	gid := info.ID
	topic := groups.Topic(gid)
	// The victim's node holds the topic itself before it joins, so that
	// its group service cannot join (nor, once removed, leave) it: the
	// subscription stays, as an uncooperative node's would.
	got := newRawSub(t, victim, topic)
	token, _, err := nodes[0].Groups().Invite(gid, groupsvc.InviteOptions{Uses: groupsvc.UnlimitedUses})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if res, err := n.Groups().Join(ctx, token); err != nil || res.Pending {
			t.Fatalf("join: %+v, %v", res, err)
		}
	}
	testnet.WaitFor(t, "four members on every node", waitLong, testnet.All(nodes, hasMembers(gid, nodes...)))
	// The subscription was dropped while the victim was an outsider;
	// announce it again now that it is a member.
	got.resubscribe(t)
	testnet.WaitFor(t, "the members hold the victim's subscription", waitLong, testnet.All(members, func(n *node.Node) bool {
		return slices.Contains(n.PubSub().ListPeers(topic), victim.PeerID())
	}))
	// Each member's posts received, by body.
	inboxes := make([]*inbox, len(members))
	for i, n := range members {
		ch, stop, err := n.Groups().Subscribe(gid)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		in := &inbox{got: map[string]bool{}}
		inboxes[i] = in
		go func() {
			for r := range ch {
				in.add(string(r.Body))
			}
		}()
	}
	post := func(n *node.Node, k int) {
		t.Helper()
		if err := n.Groups().Publish(ctx, gid, json.RawMessage(fmt.Sprint(k))); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range members {
		post(n, i)
	}
	testnet.WaitFor(t, "the victim receives the members' posts", waitLong, func() (bool, string) {
		return got.posts.Load() >= int64(len(members)), fmt.Sprintf("%d posts", got.posts.Load())
	})

	if _, err := nodes[0].Groups().Remove(ctx, gid, victim.PeerID()); err != nil {
		t.Fatal(err)
	}
	// The victim's node, without the topic validator, need not learn it.
	testnet.WaitFor(t, "the removal reaches every member", waitLong, testnet.All(members, hasMembers(gid, members...)))
	testnet.WaitFor(t, "the members drop the victim's subscription", waitLong, testnet.All(members, func(n *node.Node) bool {
		return !slices.Contains(n.PubSub().ListPeers(topic), victim.PeerID())
	}))
	// Connected again, with gossipsub running (the victim holds the
	// members' subscriptions), the victim's own announcement refused.
	testnet.WaitFor(t, "the victim is connected to the members again", waitLong, testnet.All(members, func(n *node.Node) bool {
		return n.Host().Network().Connectedness(victim.PeerID()) == network.Connected &&
			slices.Contains(victim.PubSub().ListPeers(topic), n.PeerID())
	}))
	for i, n := range members {
		if slices.Contains(n.PubSub().ListPeers(topic), victim.PeerID()) {
			t.Errorf("member %d holds the victim's subscription after it reconnected", i)
		}
	}
	got.count.Store(0)
	// Posts are gossip, not sent again when lost (docs/groups.md), and a
	// remaining member misses one now and then here (about one run in 25,
	// always member 1, also before this wave's changes). A subscription
	// announced again at that moment would explain it: groupsvc's
	// resubscribe cancels the subscription, which leaves the topic, and
	// subscribes again; not confirmed. So the members post rounds, at
	// least three, until a whole round reached every one of them: posts
	// go round without the removed member.
	const minRounds, maxRounds = 3, 10
	for round := 1; ; round++ {
		bodies := make([]string, len(members))
		for i, n := range members {
			bodies[i] = fmt.Sprint(100*round + i)
			post(n, 100*round+i)
		}
		missing := ""
		deadline := time.Now().Add(5 * time.Second)
		for {
			missing = ""
			for i, in := range inboxes {
				for j, b := range bodies {
					if !in.has(b) && missing == "" {
						missing = fmt.Sprintf("member %d lacks member %d's post of round %d", i, j, round)
					}
				}
			}
			if missing == "" || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if missing == "" && round >= minRounds {
			break
		}
		if missing != "" {
			if round == maxRounds {
				t.Fatalf("no round of posts reached every remaining member in %d rounds: %s", maxRounds, missing)
			}
			t.Logf("round %d: %s after 5 s; another round", round, missing)
		}
	}
	// A negative check: give stray copies time to arrive.
	time.Sleep(2 * time.Second)
	if n := got.count.Load(); n != 0 {
		t.Errorf("the removed member received %d messages (%d posts)", n, got.posts.Load())
	}
}

// inbox is the bodies of the posts a member received.
type inbox struct {
	mu  sync.Mutex
	got map[string]bool
}

func (in *inbox) add(body string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got[body] = true
}

func (in *inbox) has(body string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.got[body]
}

// rawSub is a gossipsub subscription made without the group service; it
// counts what arrives from other peers: every message, and the posts.
type rawSub struct {
	n     *node.Node
	topic *pubsub.Topic
	count atomic.Int64
	posts atomic.Int64

	mu     sync.Mutex
	cancel func()
}

func newRawSub(t *testing.T, n *node.Node, topic string) *rawSub {
	t.Helper()
	tp, err := n.PubSub().Join(topic)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawSub{n: n, topic: tp}
	r.subscribe(t)
	t.Cleanup(func() {
		r.mu.Lock()
		r.cancel()
		r.mu.Unlock()
		_ = tp.Close()
	})
	return r
}

func (r *rawSub) subscribe(t *testing.T) {
	t.Helper()
	sub, err := r.topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if msg.ReceivedFrom != r.n.PeerID() {
				r.count.Add(1)
				if m, err := groups.ParseMessage(msg.Data); err == nil && m.Post != nil {
					r.posts.Add(1)
				}
			}
		}
	}()
	r.mu.Lock()
	r.cancel = func() { cancel(); sub.Cancel(); <-done }
	r.mu.Unlock()
}

// resubscribe cancels the subscription and subscribes again: gossipsub
// announces it anew to every connected peer.
func (r *rawSub) resubscribe(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.subscribe(t)
}
