package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The bridge with A2A 0.3 clients and servers: the official Go SDK
// (github.com/a2aproject/a2a-go v0.3.3) and the JavaScript SDK's 0.3
// transport.

// goEchoAgent is an A2A 0.3 agent built with a2a-go's server: a text is
// answered in upper case as an artifact of two chunks (the text, then
// "!"); a data part d as the data {"echo": d}; "slow" works until
// cancelled; "msg" is answered with a message, no task. cancels counts
// the cancellations it got.
type goEchoAgent struct{ cancels atomic.Int32 }

func (g *goEchoAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var text string
	var data map[string]any
	for _, p := range rc.Message.Parts {
		switch p := p.(type) {
		case a2a.TextPart:
			text += p.Text
		case a2a.DataPart:
			data = p.Data
		}
	}
	write := func(ev a2a.Event) error { return q.Write(ctx, ev) }
	if text == "msg" {
		return write(a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "a message"}))
	}
	if rc.StoredTask == nil {
		if err := write(a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	if err := write(a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	switch {
	case data != nil:
		ev := a2a.NewArtifactEvent(rc, a2a.DataPart{Data: map[string]any{"echo": data}})
		ev.LastChunk = true
		if err := write(ev); err != nil {
			return err
		}
	case text == "slow":
		<-ctx.Done() // Cancel ends the task
		return nil
	default:
		ev := a2a.NewArtifactEvent(rc, a2a.TextPart{Text: strings.ToUpper(text)})
		last := a2a.NewArtifactUpdateEvent(rc, ev.Artifact.ID, a2a.TextPart{Text: "!"})
		last.LastChunk = true
		for _, e := range []a2a.Event{ev, last} {
			if err := write(e); err != nil {
				return err
			}
		}
	}
	done := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCompleted, nil)
	done.Final = true
	return write(done)
}

func (g *goEchoAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	g.cancels.Add(1)
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// startGoAgent serves a goEchoAgent on 127.0.0.1 with an A2A 0.3 card (url
// and preferredTransport JSONRPC only) and returns its card URL; the card
// at /blocking/ says the agent does not stream.
func startGoAgent(t *testing.T, agent *goEchoAgent) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	card := &a2a.AgentCard{Name: "GoEchoAgent", Description: "Echoes in upper case (a2a-go).", URL: base + "/rpc",
		PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0", Version: "1",
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "Echoes", Tags: []string{"echo"}}}}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	blocking := *card
	blocking.Name, blocking.Capabilities.Streaming = "GoBlockingAgent", false
	mux.Handle("/blocking"+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&blocking))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(agent)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return base + a2asrv.WellKnownAgentCardPath
}

// importCard imports the A2A agent whose card is at cardURL on n.
func importCard(t *testing.T, n *node.Node, cardURL string) a2abridge.ImportResult {
	t.Helper()
	// a2a-go v0.3.3 does not sign cards: the operator imports it anyway.
	body, _ := json.Marshal(map[string]any{"card": cardURL, "allowUnsigned": true})
	resp, err := httpapi.BearerClient(n.APIToken()).Post("http://"+n.APIAddr()+a2abridge.PathImports, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var imp a2abridge.ImportResult
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &imp) != nil {
		t.Fatalf("import of %s: %d %s", cardURL, resp.StatusCode, b)
	}
	return imp
}

// TestA2A03GoServerImport: an A2A 0.3 agent built with a2a-go's server
// is imported on node A and called from node B: through B's HTTP binding
// (text and data; message/stream, and message/send for the card that does
// not stream), and through B's A2A bridge with a2a-go's client, which
// cancels a task there; A then cancels the agent's task with tasks/cancel.
func TestA2A03GoServerImport(t *testing.T) {
	agent := &goEchoAgent{}
	cardURL := startGoAgent(t, agent)
	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer := net.Nodes[0], net.Nodes[1]
	imp := importCard(t, owner, cardURL)
	if rpc := strings.TrimSuffix(cardURL, a2asrv.WellKnownAgentCardPath) + "/rpc"; imp.Endpoint != rpc {
		t.Fatalf("import: endpoint %s, want %s", imp.Endpoint, rpc)
	}
	blocking := importCard(t, owner, strings.TrimSuffix(cardURL, a2asrv.WellKnownAgentCardPath)+"/blocking"+a2asrv.WellKnownAgentCardPath)
	net.Link(1, 0)
	testnet.WaitFor(t, "B learns the imported agents", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(imp.ThingID)) > 0 && len(consumer.Directory().Lookup(blocking.ThingID)) > 0, "not yet"
	})

	// B's HTTP binding: A forwards over A2A 0.3 (message/stream); the first
	// chunk makes the invocation long-running, the last is in the output.
	for _, tc := range []struct{ thing, in, want string }{
		{imp.ThingID, `"hi"`, `"HI!"`},
		{imp.ThingID, `{"n":12345,"s":"x"}`, `{"echo":{"n":12345,"s":"x"}}`},
		{blocking.ThingID, `"ho"`, `"HO!"`},
		{blocking.ThingID, `"msg"`, `"a message"`},
	} {
		in, want := tc.in, tc.want
		resp, err := http.Post("http://"+consumer.APIAddr()+"/things/"+tc.thing+"/actions/"+a2abridge.ActionMessage, "application/json", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out := string(b)
		if resp.StatusCode == http.StatusCreated {
			var st struct{ Href string }
			_ = json.Unmarshal(b, &st)
			testnet.WaitFor(t, "the invocation completes", 10*time.Second, func() (bool, string) {
				_, b = getJSONBody(t, "http://"+consumer.APIAddr()+st.Href)
				return strings.Contains(string(b), `"completed"`), string(b)
			})
			var done struct{ Output json.RawMessage }
			_ = json.Unmarshal(b, &done)
			out = string(done.Output)
		}
		if out != want {
			t.Errorf("HTTP binding %s: %d %s, want %s", in, resp.StatusCode, b, want)
		}
	}

	// B's A2A bridge with a2a-go's client: 0.3 → LMOS → 0.3.
	client := goClient(t, "http://"+consumer.APIAddr()+a2abridge.AgentPath(owner.PeerID(), imp.ThingID), a2aclient.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hey"})})
	if task, ok := res.(*a2a.Task); err != nil || !ok || task.Status.State != a2a.TaskStateCompleted || goArtifacts(task) != "HEY,HEY!" {
		t.Fatalf("message/send through B: %v %s", err, jsonOf(res))
	}
	polling := goClient(t, "http://"+consumer.APIAddr()+a2abridge.AgentPath(owner.PeerID(), imp.ThingID), a2aclient.Config{Polling: true})
	res, err = polling.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow"})})
	task, ok := res.(*a2a.Task)
	if err != nil || !ok {
		t.Fatalf("message/send slow: %v %s", err, jsonOf(res))
	}
	testnet.WaitFor(t, "the slow task works", 10*time.Second, func() (bool, string) {
		got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateWorking, jsonOf(got)
	})
	got, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/cancel: %v %s", err, jsonOf(got))
	}
	testnet.WaitFor(t, "A cancels the agent's task", 10*time.Second, func() (bool, string) {
		return agent.cancels.Load() == 1, "no tasks/cancel yet"
	})
}

// goClient is a2a-go's client of the agent at base, from the card it
// resolves there.
func goClient(t *testing.T, base string, cfg a2aclient.Config) *a2aclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolving the card at %s: %v", base, err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithConfig(cfg))
	if err != nil {
		t.Fatalf("a2a-go client from the card at %s: %v", base, err)
	}
	t.Cleanup(func() { _ = client.Destroy() })
	return client
}

// goArtifacts is the text of each of task's artifacts, comma-separated.
func goArtifacts(task *a2a.Task) string {
	var arts []string
	for _, a := range task.Artifacts {
		var sb strings.Builder
		for _, p := range a.Parts {
			if tp, ok := p.(a2a.TextPart); ok {
				sb.WriteString(tp.Text)
			}
		}
		arts = append(arts, sb.String())
	}
	return strings.Join(arts, ",")
}

// goEvent describes a stream event as kind:state or kind:artifact:text.
func goEvent(ev a2a.Event) string {
	switch e := ev.(type) {
	case *a2a.Task:
		return "task:" + string(e.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		s := "status-update:" + string(e.Status.State)
		if e.Final {
			s += ":final"
		}
		return s
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact-update:" + string(e.Artifact.ID) + ":" + goArtifacts(&a2a.Task{Artifacts: []*a2a.Artifact{e.Artifact}})
	}
	return "message"
}

// TestA2A03GoClient: a2a-go's client, from the card node B serves, calls
// an agent of node A through B: message/send, message/stream, tasks/get,
// tasks/resubscribe and tasks/cancel, the push notification methods
// refused, and the node-wide endpoint from B's own card.
func TestA2A03GoClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	ep := base + a2abridge.AgentPath(owner.PeerID(), id)

	// The card serves both generations, signed over both.
	_, raw := getJSONBody(t, ep+".well-known/agent-card.json")
	var card a2abridge.AgentCard
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	pub, _ := lmosproto.Ed25519FromPeerID(consumer.PeerID())
	if _, err := a2abridge.VerifyCard(card, pub); err != nil {
		t.Fatalf("card signature: %v", err)
	}
	has03 := slices.ContainsFunc(card.SupportedInterfaces, func(i a2abridge.AgentInterface) bool {
		return i.URL == ep && i.ProtocolBinding == a2abridge.BindingJSONRPC && i.ProtocolVersion == "0.3"
	})
	if card.URL != ep || card.PreferredTransport != "JSONRPC" || card.ProtocolVersion != "0.3.0" || !has03 ||
		card.SupportedInterfaces[0].ProtocolVersion != "1.0" || card.SupportedInterfaces[0].ProtocolBinding != a2abridge.BindingJSONRPC {
		t.Fatalf("card %s", raw)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := goClient(t, ep, a2aclient.Config{})
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hello"})})
	task, ok := res.(*a2a.Task)
	if err != nil || !ok || task.Status.State != a2a.TaskStateCompleted || goArtifacts(task) != "HELLO" || len(task.History) != 1 || task.History[0].Role != a2a.MessageRoleUser {
		t.Fatalf("message/send: %v %s", err, jsonOf(res))
	}
	if got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCompleted || goArtifacts(got) != "HELLO" {
		t.Fatalf("tasks/get: %v %s", err, jsonOf(got))
	}
	if _, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("tasks/get of an unknown task: %v", err)
	}
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("tasks/cancel of a completed task: %v", err)
	}
	// A stream that cannot start ends with the error as its one event.
	for id, want := range map[a2a.TaskID]error{"no-such-task": a2a.ErrTaskNotFound, task.ID: a2a.ErrUnsupportedOperation} {
		var got error
		for _, err := range client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}) {
			got = err
			break
		}
		if !errors.Is(got, want) {
			t.Errorf("tasks/resubscribe of task %s: %v, want %v", id, got, want)
		}
	}
	if _, err := client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: task.ID}); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
		t.Errorf("tasks/pushNotificationConfig/get: %v", err)
	}

	var events []string
	for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "stream"})}) {
		if err != nil {
			t.Fatalf("message/stream: %v", err)
		}
		events = append(events, goEvent(ev))
	}
	want := "task:submitted status-update:working artifact-update:stream:a artifact-update:stream:b artifact-update:stream:c artifact-update:result:abc status-update:completed:final"
	if s := strings.Join(events, " "); s != want {
		t.Errorf("message/stream:\n got %s\nwant %s", s, want)
	}

	// A long-running task: sent without blocking, resubscribed to, cancelled.
	polling := goClient(t, ep, a2aclient.Config{Polling: true})
	res, err = polling.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow"})})
	if task, ok = res.(*a2a.Task); err != nil || !ok || task.Status.State.Terminal() {
		t.Fatalf("message/send slow: %v %s", err, jsonOf(res))
	}
	testnet.WaitFor(t, "the slow task works", 10*time.Second, func() (bool, string) {
		got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateWorking, jsonOf(got)
	})
	resub, joined := make(chan string, 1), make(chan struct{})
	go func() {
		var evs []string
		for ev, err := range client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: task.ID}) {
			if err != nil {
				evs = append(evs, err.Error())
				break
			}
			if evs = append(evs, goEvent(ev)); len(evs) == 1 {
				close(joined)
			}
		}
		resub <- strings.Join(evs, " ")
	}()
	select { // the resubscription's first event, the task as it is
	case <-joined:
	case s := <-resub:
		t.Fatalf("tasks/resubscribe: %s", s)
	}
	if got, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/cancel: %v %s", err, jsonOf(got))
	}
	if s := <-resub; !strings.HasPrefix(s, "task:") || !strings.HasSuffix(s, "status-update:canceled:final") {
		t.Errorf("tasks/resubscribe: %s", s)
	}

	// B's own card: its 0.3 url is the node-wide endpoint.
	node := goClient(t, base, a2aclient.Config{})
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "via the node"})
	msg.Metadata = map[string]any{"lmos:agent": id}
	res, err = node.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if task, ok = res.(*a2a.Task); err != nil || !ok || goArtifacts(task) != "VIA THE NODE" {
		t.Fatalf("message/send at the node: %v %s", err, jsonOf(res))
	}
}

// TestA2A03JSClient: the A2A JavaScript SDK's 0.3 JSON-RPC transport,
// picked from the card's 0.3 members, calls an agent of node A through
// node B: send, stream, get, resubscribe, cancel; and the node-wide
// endpoint.
func TestA2A03JSClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	path := a2abridge.AgentPath(owner.PeerID(), id)
	got := a2aJS(t, "client03.mjs", map[string]any{"base": base, "agent": path, "thingId": id})
	for what, want := range map[string]string{
		"card":   `{"preferredTransport":"JSONRPC","protocolVersion":"0.3.0","transport":"0.3","url":"` + base + path + `"}`,
		"send":   `{"artifacts":["HELLO"],"state":"TASK_STATE_COMPLETED"}`,
		"stream": `["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:a","artifact:stream:b","artifact:stream:c","artifact:result:abc","status:TASK_STATE_COMPLETED"]`,
		"cancel": `{"after":"TASK_STATE_CANCELED","cancelled":"TASK_STATE_CANCELED","got":"TASK_STATE_WORKING","resubscribed":["task:TASK_STATE_WORKING","status:TASK_STATE_CANCELED"]}`,
		"wire": `["message/send (A2A-Version 0.3)","message/stream (A2A-Version 0.3)","tasks/get (A2A-Version 0.3)","tasks/resubscribe (A2A-Version 0.3)",` +
			`"tasks/cancel (A2A-Version 0.3)"]`,
		"nodeCall": `{"artifacts":["VIA THE NODE"],"state":"TASK_STATE_COMPLETED"}`,
	} {
		if s := jsonOf(got[what]); s != want {
			t.Errorf("%s: got %s\nwant %s", what, s, want)
		}
	}
	if s, _ := got["unknownTask"].(string); !strings.Contains(s, "not found") {
		t.Errorf("tasks/get of an unknown task: %v", got["unknownTask"])
	}
}

// TestA2A03JSSession: a streaming conversation with the JavaScript SDK's
// 0.3 transport is an LMOS streaming session of an agent on another node.
func TestA2A03JSSession(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aSessionAgent)
	got := a2aJS(t, "client03.mjs", map[string]any{"task": "session", "base": "http://" + consumer.APIAddr(), "agent": a2abridge.AgentPath(owner.PeerID(), id)})
	want := `{"events":["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:HELLO","artifact:stream:WORLD","artifact:stream:**","status:TASK_STATE_COMPLETED"],` +
		`"history":3,"last":"TASK_STATE_COMPLETED","more":"TASK_STATE_WORKING"}`
	if s := jsonOf(got["session"]); s != want {
		t.Fatalf("session: got %s\nwant %s", s, want)
	}
	if s := jsonOf(got["wire"]); s != `["message/stream (A2A-Version 0.3)","message/send (A2A-Version 0.3)"]` {
		t.Errorf("wire: %s", s)
	}
}
