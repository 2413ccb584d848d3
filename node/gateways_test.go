package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/internal/testnet"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// wsDial opens an lmosprotocol WebSocket to a node's API.
func wsDial(t *testing.T, ctx context.Context, addr, path string, header ...string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+addr+path, &websocket.DialOptions{
		Subprotocols: []string{lmosproto.WebSocketSubprotocol}, HTTPHeader: h,
	})
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != lmosproto.WebSocketSubprotocol {
		t.Fatalf("negotiated sub-protocol %q", got)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func wsSend(t *testing.T, ctx context.Context, c *websocket.Conn, m any) {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, raw); err != nil {
		t.Fatal(err)
	}
}

func wsRead(t *testing.T, ctx context.Context, c *websocket.Conn) *lmosproto.Message {
	t.Helper()
	_, raw, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m lmosproto.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("read %s: %v", raw, err)
	}
	return &m
}

// An agent process registers a Thing on node A over WebSocket
// (/ws/agent); a consumer on node B invokes it over WebSocket (/ws). The
// request crosses A ← B over libp2p, reaches the agent as an envelope, and
// the agent's answer comes back to the consumer by correlationID.
func TestWebSocketAgentAcrossNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)

	td := testnet.TD(t, id, "EchoAgent", "echo")
	td.Actions = map[string]*lmosproto.ActionAffordance{"echo": {
		Input: json.RawMessage(`{"type":"string"}`),
		Forms: []lmosproto.Form{{Href: "ws://agent.invalid/echo"}},
	}}
	agent := wsDial(t, ctx, owner.APIAddr(), "/ws/agent", "Authorization", "Bearer "+owner.APIToken())
	regID := uuid.NewString()
	wsSend(t, ctx, agent, map[string]any{"messageType": "registerThing", "messageID": regID, "thingID": id, "data": td})
	_, ackRaw, err := agent.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ack struct{ MessageType, CorrelationID string }
	if err := json.Unmarshal(ackRaw, &ack); err != nil || ack.MessageType != "thingRegistered" || ack.CorrelationID != regID {
		t.Fatalf("registration answer %s (%v)", ackRaw, err)
	}

	net.Link(1, 0)
	testnet.WaitFor(t, "consumer learns the agent's Thing", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})

	user := wsDial(t, ctx, consumer.APIAddr(), "/ws")
	corr := uuid.NewString()
	wsSend(t, ctx, user, map[string]any{"thingID": id, "messageID": uuid.NewString(), "correlationID": corr,
		"messageType": "invokeAction", "action": "echo", "input": "hello"})

	req := wsRead(t, ctx, agent)
	if req.Type != lmosproto.MsgInvokeAction || req.Name != "echo" || req.Input.String() != `"hello"` {
		t.Fatalf("agent got %+v", req)
	}
	reply := req.Reply(lmosproto.MsgActionStatus)
	reply.Status = lmosproto.ActionCompleted
	reply.Output = lmosproto.StringValue("HELLO")
	wsSend(t, ctx, agent, reply)

	got := wsRead(t, ctx, user)
	if got.Type != lmosproto.MsgActionStatus || got.Status != lmosproto.ActionCompleted || got.CorrelationID != corr || got.Output.String() != `"HELLO"` {
		t.Fatalf("consumer got %+v", got)
	}

	// Input that does not match the TD's schema is refused on the owner
	// before the agent sees it, and the error names what is wrong.
	wsSend(t, ctx, user, map[string]any{"thingID": id, "messageID": uuid.NewString(),
		"messageType": "invokeAction", "action": "echo", "input": 42})
	if bad := wsRead(t, ctx, user); bad.Type != lmosproto.MsgError || bad.Status != "400" {
		t.Fatalf("invalid input answer: %+v", bad)
	}
}
