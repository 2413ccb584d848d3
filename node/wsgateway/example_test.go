package wsgateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/interact"
	"github.com/lmosnode/lmosnode/node/wsgateway"
	"github.com/lmosnode/lmosnode/proto"
)

// A node serves consumers at /ws; a consumer runs an action over one
// socket with the lmosprotocol sub-protocol.
func Example() {
	td, _ := proto.ParseTD([]byte(`{"id": "urn:example:echo", "title": "Echo",
		"actions": {"echo": {"input": {"type": "string"}, "forms": [{"href": "actions/echo"}]}}}`))
	engine, _ := interact.NewEngine(interact.EngineDeps{Things: interact.ThingsFunc(func(id string) (*proto.TD, bool) { return td, id == td.ID })}, interact.EngineConfig{})
	defer engine.Close()
	engine.SetBackend(td.ID, interact.NewThing().OnAction("echo",
		func(_ context.Context, in proto.Value, _ func(proto.Value)) (proto.Value, error) { return in, nil }))

	gw, _ := wsgateway.NewGateway(wsgateway.GatewayDeps{Invoker: engine}, wsgateway.Config{})
	defer gw.Close()
	mux := http.NewServeMux()
	mux.Handle("/ws", gw)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws",
		&websocket.DialOptions{Subprotocols: []string{proto.WebSocketSubprotocol}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ws.CloseNow()
	_ = ws.Write(ctx, websocket.MessageText, []byte(`{"thingID": "urn:example:echo", "messageID": "b45e8f90-8824-4c23-bc37-c6c4ddad4b2c",
		"messageType": "invokeAction", "action": "echo", "input": "hello"}`))
	_, data, _ := ws.Read(ctx)
	var reply proto.Message
	_ = proto.JSON.Unmarshal(data, &reply)
	fmt.Println(reply.Type, reply.Status, reply.Output, reply.CorrelationID)
	// Output: actionStatus completed "hello" b45e8f90-8824-4c23-bc37-c6c4ddad4b2c
}
