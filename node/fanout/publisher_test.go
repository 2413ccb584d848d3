package fanout

import (
	"context"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The publisher keeps subscribing to a Thing whose feed fails (no backend
// yet) and publishes its events once it works; the owner's own validator
// accepts them.
func TestPublisherRetries(t *testing.T) {
	nodes := newTestNet(t, 1)
	td := parseTD(t, sensorTD)
	engine, err := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*lmosproto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	f := newFanout(t, Deps{PubSub: nodes[0].ps, Self: nodes[0].h.ID(), Local: engine}, Config{Retry: 20 * time.Millisecond})
	if err := f.Publish(td); err != nil {
		t.Fatal(err)
	}
	if err := f.Publish(td); err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	f.mu.Lock()
	j := f.topics[TopicName(nodes[0].h.ID(), td.ID)]
	f.mu.Unlock()
	if j == nil || j.refs != 1 {
		t.Fatalf("topic joined %v", j)
	}
	sub, err := j.topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Cancel()

	time.Sleep(100 * time.Millisecond) // a few failed attempts: no backend
	sensor := interact.NewThing()
	engine.SetBackend(td.ID, sensor)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for sensor.Emit("tick", lmosproto.Value{}) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the publisher never subscribed to the Thing's events")
		case <-time.After(10 * time.Millisecond):
		}
	}
	msg, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := msg.ValidatorData.(*lmosproto.Message)
	if !ok || m.Type != lmosproto.MsgEvent || m.Name != "tick" || msg.GetFrom() != nodes[0].h.ID() {
		t.Fatalf("got %v from %s", msg.ValidatorData, msg.GetFrom())
	}
}
