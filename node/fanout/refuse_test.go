package fanout

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const groupTD = `{
  "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
  "id": "urn:example:private",
  "title": "Private",
  "lmos:groups": ["g1"],
  "securityDefinitions": {"nosec": {"scheme": "nosec"}}, "security": "nosec",
  "events": {"tick": {"forms": [{"href": "tick"}]}}
}`

func TestRefusals(t *testing.T) {
	nodes := newTestNet(t, 1)
	self, owner := nodes[0].h.ID(), newPeerID(t)
	sensor, private := parseTD(t, sensorTD), parseTD(t, groupTD)
	lookup := func(p peer.ID, id string) (*lmosproto.TD, bool) {
		switch {
		case p == owner && id == sensor.ID:
			return sensor, true
		case p == owner && id == private.ID:
			return private, true
		}
		return nil, false
	}
	f := newFanout(t, Deps{PubSub: nodes[0].ps, Self: self, TD: lookup, Local: &failInvoker{}}, Config{})
	ctx := context.Background()
	for _, tt := range []struct {
		name           string
		publisher      peer.ID
		thingID, event string
		err            error
		mentions       string
	}{
		{"group-scoped", owner, private.ID, "", ErrGroupScoped, private.ID},
		{"unknown thing", owner, "urn:example:nope", "", ErrUnknownThing, "urn:example:nope"},
		{"unknown event", owner, sensor.ID, "nope", ErrUnknownEvent, `"nope"`},
		{"own thing", self, sensor.ID, "", nil, "own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.Subscribe(ctx, tt.publisher, tt.thingID, tt.event)
			if err == nil || (tt.err != nil && !errors.Is(err, tt.err)) || !strings.Contains(err.Error(), tt.mentions) {
				t.Fatalf("Subscribe: %v, want %v naming %s", err, tt.err, tt.mentions)
			}
		})
	}
	if len(nodes[0].ps.GetTopics()) != 0 {
		t.Errorf("refused subscriptions joined %v", nodes[0].ps.GetTopics())
	}
	if err := f.Publish(private); !errors.Is(err, ErrGroupScoped) {
		t.Errorf("Publish of a group-scoped Thing: %v", err)
	}

	// The adapter sends what the Fanout refuses, and everything but
	// subscriptions, to the owner.
	remote := &failInvoker{}
	iv := &Invoker{Owner: owner, Remote: remote, Fanout: f}
	sub := lmosproto.NewMessage(private.ID, lmosproto.MsgSubscribeAllEvents)
	read := lmosproto.NewMessage(sensor.ID, lmosproto.MsgReadProperty)
	read.Name = "x"
	for _, req := range []*lmosproto.Message{sub, read} {
		if _, err := iv.Invoke(ctx, req); err == nil {
			t.Fatalf("%s went not to the remote invoker", req.Type)
		}
	}
	if len(remote.calls) != 2 {
		t.Errorf("remote invoker got %d requests, want 2", len(remote.calls))
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Subscribe(ctx, owner, sensor.ID, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
	if _, err := iv.Invoke(ctx, lmosproto.NewMessage(sensor.ID, lmosproto.MsgSubscribeAllEvents)); !errors.Is(err, ErrClosed) {
		t.Errorf("adapter after Close: %v", err)
	}
}
