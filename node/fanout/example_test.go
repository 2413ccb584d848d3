package fanout_test

import (
	"context"
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/fanout"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// How a node wires the fan-out: one Fanout on the node's PubSub, Publish
// for every own Thing, the Invoker adapter where the router reaches
// another node's Things. (Not run: it needs a running node.)
func Example() {
	var (
		h      host.Host                                   // the node's libp2p host
		ps     *pubsub.PubSub                              // the node's gossipsub router
		engine *interact.Engine                            // the node's own Things
		client *interact.Client                            // streams to other nodes
		score  *pubsub.TopicScoreParams                    // the announce topic's score parameters
		lookup func(peer.ID, string) (*lmosproto.TD, bool) // the directory
		own    *lmosproto.TD                               // an own Thing with events
		owner  peer.ID                                     // another node
	)
	f, err := fanout.New(fanout.Deps{PubSub: ps, Self: h.ID(), Local: engine, TD: lookup, TopicScore: score}, fanout.Config{})
	if err != nil {
		return
	}
	defer f.Close()

	// Owner side: the events of an own Thing go out on its topic.
	_ = f.Publish(own)

	// Consumer side: a gateway subscribes through the router's Invoker for
	// owner, which serves subscriptions from the topic.
	var inv interact.Invoker = &fanout.Invoker{Owner: owner, Remote: client.Invoker(owner), Fanout: f}
	req := lmosproto.NewMessage("urn:example:sensor", lmosproto.MsgSubscribeEvent)
	req.Name = "tick"
	s, err := inv.Invoke(context.Background(), req)
	if err != nil {
		return
	}
	for m := range s.Replies() {
		fmt.Println(m.Name, m.Data)
	}
}
