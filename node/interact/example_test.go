package interact_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/proto"
)

const weatherTD = `{
  "@context": "https://www.w3.org/2022/wot/td/v1.1",
  "id": "urn:example:weather",
  "title": "Weather",
  "securityDefinitions": {"nosec": {"scheme": "nosec"}}, "security": "nosec",
  "properties": {"unit": {"type": "string", "enum": ["C", "F"], "forms": [{"href": "unit"}]}},
  "actions": {
    "getWeather": {"input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "forms": [{"href": "w"}]},
    "chat": {"input": {"type": "string"}, "forms": [{"href": "c"}]}
  }
}`

// A Go program that embeds the node registers handlers per affordance;
// consumers reach them through the engine with LMOS messages.
func Example_goSDK() {
	td, _ := proto.ParseTD([]byte(weatherTD))
	things := interact.ThingsFunc(func(id string) (*proto.TD, bool) { return td, id == td.ID })

	unit := proto.StringValue("C")
	weather := interact.NewThing().
		OnProperty("unit",
			func(context.Context) (proto.Value, error) { return unit, nil },
			func(_ context.Context, v proto.Value) error { unit = v; return nil }).
		OnAction("getWeather", func(ctx context.Context, in proto.Value, progress func(proto.Value)) (proto.Value, error) {
			var q struct{ City string }
			if err := in.Decode(&q); err != nil {
				return proto.Value{}, err
			}
			progress(proto.StringValue("asking the sky"))
			return proto.StringValue("Sunny in " + q.City), nil
		}).
		OnStream("chat", func(ctx context.Context, in <-chan proto.Value, out func(proto.Value) error) error {
			for v := range in {
				var s string
				_ = v.Decode(&s)
				if err := out(proto.StringValue(strings.ToUpper(s))); err != nil {
					return err
				}
			}
			return nil
		})

	engine, _ := interact.NewEngine(interact.EngineDeps{Things: things}, interact.EngineConfig{})
	defer engine.Close()
	engine.SetBackend(td.ID, weather)
	ctx := context.Background()

	// request-reply with progress (one request, multiple responses)
	req := proto.NewMessage(td.ID, proto.MsgInvokeAction)
	req.Name, req.Input = "getWeather", proto.StringValue("Berlin")
	s, _ := engine.Invoke(ctx, req)
	for m := range s.Replies() {
		fmt.Println(m.Type, m.Status, m.Title, m.Detail)
	}
	req.Input, _ = proto.ValueOf(map[string]string{"city": "Berlin"})
	s, _ = engine.Invoke(ctx, req)
	for m := range s.Replies() {
		fmt.Println(m.Type, m.Status, m.Output)
	}

	// a streaming session
	chat := proto.NewMessage(td.ID, proto.MsgInvokeAction)
	chat.Name, chat.Stream = "chat", true
	s, _ = engine.Invoke(ctx, chat)
	fmt.Println("accepted:", (<-s.Replies()).Stream)
	for _, w := range []string{"hello", "node"} {
		_ = s.Send(ctx, &proto.Message{Type: proto.MsgStreamInput, Input: proto.StringValue(w)})
		fmt.Println((<-s.Replies()).Output)
	}
	_ = s.Send(ctx, &proto.Message{Type: proto.MsgStreamEnd})
	fmt.Println((<-s.Replies()).Status)
	// Output:
	// error 400 Invalid input input does not match the data schema: at "": got string, want object
	// actionStatus running "asking the sky"
	// actionStatus completed "Sunny in Berlin"
	// accepted: true
	// "HELLO"
	// "NODE"
	// completed
}

// A consumer node reaches a Thing of another node over libp2p: the owner
// serves its engine on /lmos/interact/1.0.0, the consumer's Client opens a
// stream per interaction.
func ExampleClient() {
	td, _ := proto.ParseTD([]byte(weatherTD))
	things := interact.ThingsFunc(func(id string) (*proto.TD, bool) { return td, id == td.ID })
	engine, _ := interact.NewEngine(interact.EngineDeps{Things: things}, interact.EngineConfig{})
	defer engine.Close()
	engine.SetBackend(td.ID, interact.NewThing().
		OnProperty("unit", func(context.Context) (proto.Value, error) { return proto.StringValue("C"), nil }, nil))

	listen := libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0")
	owner, _ := libp2p.New(listen, libp2p.DisableRelay())
	defer owner.Close()
	consumer, _ := libp2p.New(listen, libp2p.DisableRelay())
	defer consumer.Close()
	server, _ := interact.NewServer(interact.ServerDeps{Host: owner, Invoker: engine}, interact.TransportConfig{})
	defer server.Close()
	client, _ := interact.NewClient(interact.ClientDeps{Host: consumer}, interact.TransportConfig{})
	defer client.Close()
	_ = consumer.Connect(context.Background(), peer.AddrInfo{ID: owner.ID(), Addrs: owner.Addrs()})

	req := proto.NewMessage(td.ID, proto.MsgReadProperty)
	req.Name = "unit"
	s, _ := client.Do(context.Background(), owner.ID(), req)
	for m := range s.Replies() {
		fmt.Println(m.Type, m.Name, m.Value)
	}
	// Output:
	// propertyReading unit "C"
}
