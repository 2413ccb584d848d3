package node_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Pattern 5, publish-subscribe: consumers on two other nodes subscribe to
// a Thing's event through their own node; the owner publishes each event
// once on the Thing's gossip topic and every subscriber receives it.
func TestEventFanOutAcrossNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net := testnet.New(t, 3, testnet.Options{})
	net.Ring()
	testnet.WaitFor(t, "every node has both others on the announce topic", 10*time.Second, testnet.OnAnnounceTopic(net.Nodes, 2))
	owner := net.Nodes[0]
	id := testnet.UniqueID(t)
	td := testnet.TD(t, id, "Ticker", "ticks")
	td.Events = map[string]*lmosproto.EventAffordance{"tick": {
		Data:  json.RawMessage(`{"type":"integer"}`),
		Forms: []lmosproto.Form{{Href: "https://ticker.invalid/events/tick"}},
	}}
	thing := interact.NewThing()
	if _, err := owner.Register(td, thing); err != nil {
		t.Fatal(err)
	}
	testnet.WaitFor(t, "every node learns the Thing", 10*time.Second, testnet.All(net.Nodes, func(n *node.Node) bool {
		return len(n.Directory().Lookup(id)) > 0
	}))

	var sessions []interact.Session
	for _, n := range net.Nodes[1:] {
		req := lmosproto.NewMessage(id, lmosproto.MsgSubscribeEvent)
		req.Name = "tick"
		s, err := n.Invoker().Invoke(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions = append(sessions, s)
	}
	// The owner emits until every subscriber has an event: the topic mesh
	// forms within a few gossip heartbeats after the subscriptions.
	got := make([]*lmosproto.Message, len(sessions))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		v, _ := lmosproto.ValueOf(i)
		thing.Emit("tick", v)
		for k, s := range sessions {
			select {
			case m, ok := <-s.Replies():
				if !ok {
					t.Fatalf("subscriber %d: session ended", k)
				}
				if m.Type == lmosproto.MsgError {
					t.Fatalf("subscriber %d: %s: %s", k, m.Title, m.Detail)
				}
				got[k] = m
			default:
			}
		}
		if got[0] != nil && got[1] != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("events received: %v", got)
		case <-tick.C:
		}
	}
	for k, m := range got {
		if m.Type != lmosproto.MsgEvent || m.Name != "tick" || m.ThingID != id {
			t.Errorf("subscriber %d got %+v", k, m)
		}
	}
}
