package node_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// A Go program that embeds a node registers a Thing with Go handlers and
// calls it through the node's Invoker, as it would call a Thing of any
// other node.
func ExampleNode_Register() {
	home, err := os.MkdirTemp("", "lmosnode-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	cfg := config.Loopback(home)
	n, err := node.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(context.Background()); err != nil {
		log.Fatal(err)
	}

	td, err := lmosproto.ParseTD([]byte(`{
	  "@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Tool"], "id": "urn:example:greeter", "title": "Greeter",
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc",
	  "actions": {"greet": {"input": {"type": "string"}, "output": {"type": "string"},
	    "forms": [{"href": "https://greeter.example/greet"}]}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	greeter := interact.NewThing().OnAction("greet", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var name string
		if err := in.Decode(&name); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.StringValue("Hello, " + name), nil
	})
	if _, err := n.Register(td, greeter); err != nil {
		log.Fatal(err)
	}

	req := lmosproto.NewMessage("urn:example:greeter", lmosproto.MsgInvokeAction)
	req.Name = "greet"
	req.Input = lmosproto.StringValue("Ada")
	sess, err := n.Invoker().Invoke(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	for m := range sess.Replies() {
		fmt.Println(m.Type, m.Status, m.Output)
	}
	// Output: actionStatus completed "Hello, Ada"
}
