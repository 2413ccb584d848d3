package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/examples/demo"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// a2aAgent registers on n an lmos:Agent with one action "chat" (input a
// string): "stream" answers the chunks "a", "b", "c" as running statuses,
// then "abc"; "slow" runs until cancelled; anything else is answered in
// upper case.
func a2aAgent(t testing.TB, n *node.Node, id string, groups ...string) {
	t.Helper()
	td := testnet.TD(t, id, "ChatAgent", "chat")
	td.Description = "Answers in upper case."
	td.Groups = groups
	td.Actions = map[string]*lmosproto.ActionAffordance{"chat": {
		Input:  json.RawMessage(`{"type":"string"}`),
		Output: json.RawMessage(`{"type":"string"}`),
		Forms:  []lmosproto.Form{{Href: "https://agent.invalid/chat"}},
	}}
	thing := interact.NewThing().OnAction("chat", func(ctx context.Context, in lmosproto.Value, progress func(lmosproto.Value)) (lmosproto.Value, error) {
		var s string
		if err := in.Decode(&s); err != nil {
			return lmosproto.Value{}, err
		}
		switch s {
		case "stream":
			for _, c := range []string{"a", "b", "c"} {
				progress(lmosproto.StringValue(c))
			}
			return lmosproto.StringValue("abc"), nil
		case "slow":
			progress(lmosproto.StringValue("started"))
			<-ctx.Done()
			return lmosproto.Value{}, ctx.Err()
		}
		return lmosproto.StringValue(strings.ToUpper(s)), nil
	})
	if _, err := n.Register(td, thing); err != nil {
		t.Fatal(err)
	}
}

// a2aSessionAgent registers on n an lmos:Agent whose one action "talk"
// is a streaming session: every input chunk comes back in upper case, and
// the session ends with the number of chunks it got.
func a2aSessionAgent(t testing.TB, n *node.Node, id string, groups ...string) {
	t.Helper()
	td := testnet.TD(t, id, "TalkAgent", "talk")
	td.Groups = groups
	td.Actions = map[string]*lmosproto.ActionAffordance{"talk": {
		Input: json.RawMessage(`{"type":"string"}`),
		Forms: []lmosproto.Form{{Href: "https://agent.invalid/talk"}},
	}}
	thing := interact.NewThing().OnStream("talk", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		n := 0
		for v := range in {
			var s string
			if err := v.Decode(&s); err != nil {
				return err
			}
			n++
			if err := out(lmosproto.StringValue(strings.ToUpper(s))); err != nil {
				return err
			}
		}
		return out(lmosproto.StringValue(strings.Repeat("*", n)))
	})
	if _, err := n.Register(td, thing); err != nil {
		t.Fatal(err)
	}
}

// a2aPair starts node A with an agent registered by register and node
// B, linked, once B knows the agent.
func a2aPair(t *testing.T, register func(testing.TB, *node.Node, string, ...string)) (owner, consumer *node.Node, id string) {
	t.Helper()
	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer = net.Nodes[0], net.Nodes[1]
	id = testnet.UniqueID(t)
	register(t, owner, id)
	net.Link(1, 0)
	testnet.WaitFor(t, "B learns the agent", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(id)) > 0, "not yet"
	})
	return owner, consumer, id
}

// a2aCall makes a JSON-RPC call of the A2A bridge at url and returns the
// response.
func a2aCall(t *testing.T, url, method string, params any) (result json.RawMessage, rpcErr *a2abridge.RPCError) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage     `json:"result"`
		Error  *a2abridge.RPCError `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %s: %v", method, b, err)
	}
	return r.Result, r.Error
}

func getJSONBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestA2AGo drives the bridge of node B with plain JSON-RPC: a message to
// an agent of node A, and a group-scoped agent of A that B may not call.
func TestA2AGo(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	ep := base + a2abridge.AgentPath(owner.PeerID(), id)

	status, card := getJSONBody(t, ep+".well-known/agent-card.json")
	if status != http.StatusOK || !strings.Contains(string(card), `"signatures"`) {
		t.Fatalf("card: %d %s", status, card)
	}
	var c a2abridge.AgentCard
	if err := json.Unmarshal(card, &c); err != nil {
		t.Fatal(err)
	}
	pub, _ := lmosproto.Ed25519FromPeerID(consumer.PeerID())
	if _, err := a2abridge.VerifyCard(c, pub); err != nil {
		t.Fatalf("card signature: %v", err)
	}
	if c.SupportedInterfaces[0].URL != ep || len(c.Skills) != 1 || c.Skills[0].ID != "chat" {
		t.Fatalf("card %s", card)
	}

	res, rerr := a2aCall(t, ep, a2abridge.MethodSendMessage, map[string]any{"message": map[string]any{
		"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}}}})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var sent a2abridge.SendMessageResponse
	if err := json.Unmarshal(res, &sent); err != nil || sent.Task == nil {
		t.Fatalf("SendMessage: %s (%v)", res, err)
	}
	if sent.Task.Status.State != a2abridge.StateCompleted || len(sent.Task.Artifacts) != 1 || *sent.Task.Artifacts[0].Parts[0].Text != "HELLO" {
		t.Fatalf("task %s", res)
	}
	res, rerr = a2aCall(t, ep, a2abridge.MethodGetTask, map[string]any{"id": sent.Task.ID})
	if rerr != nil || !strings.Contains(string(res), a2abridge.StateCompleted) {
		t.Fatalf("GetTask: %s %v", res, rerr)
	}
	if _, rerr = a2aCall(t, ep, a2abridge.MethodCancelTask, map[string]any{"id": sent.Task.ID}); rerr == nil || rerr.Code != a2abridge.CodeTaskNotCancelable {
		t.Fatalf("CancelTask of a completed task: %v", rerr)
	}
	if _, rerr = a2aCall(t, ep, a2abridge.MethodGetTask, map[string]any{"id": "no-such-task"}); rerr == nil || rerr.Code != a2abridge.CodeTaskNotFound {
		t.Fatalf("GetTask of an unknown task: %v", rerr)
	}
	res, rerr = a2aCall(t, ep, a2abridge.MethodListTasks, map[string]any{"contextId": sent.Task.ContextID})
	var list a2abridge.ListTasksResponse
	if rerr != nil || json.Unmarshal(res, &list) != nil || list.TotalSize != 1 || list.Tasks[0].ID != sent.Task.ID || len(list.Tasks[0].Artifacts) != 0 {
		t.Fatalf("ListTasks: %s %v", res, rerr)
	}
	// A message into a finished task, an action that does not exist, a
	// file part, a push notification config: refused with A2A's codes.
	for _, tc := range []struct {
		msg  map[string]any
		code int
	}{
		{map[string]any{"messageId": "m2", "taskId": sent.Task.ID, "parts": []any{map[string]any{"text": "x"}}}, a2abridge.CodeUnsupportedOperation},
		{map[string]any{"messageId": "m3", "metadata": map[string]any{"lmos:action": "nope"}, "parts": []any{map[string]any{"text": "x"}}}, a2abridge.CodeInvalidParams},
		{map[string]any{"messageId": "m4", "parts": []any{map[string]any{"url": "https://x.invalid/f"}}}, a2abridge.CodeContentTypeNotSupported},
	} {
		if res, rerr := a2aCall(t, ep, a2abridge.MethodSendMessage, map[string]any{"message": tc.msg}); rerr == nil || rerr.Code != tc.code {
			t.Errorf("SendMessage %v: %s %v, want code %d", tc.msg, res, rerr, tc.code)
		}
	}
	if res, rerr := a2aCall(t, ep, "CreateTaskPushNotificationConfig", map[string]any{}); rerr == nil || rerr.Code != a2abridge.CodePushNotSupported {
		t.Errorf("push config: %s %v", res, rerr)
	}
	if res, rerr := a2aCall(t, ep, "message/send", map[string]any{}); rerr == nil || rerr.Code != a2abridge.CodeMethodNotFound {
		t.Errorf("an A2A 0.3 method: %s %v", res, rerr)
	}

	// Without A2A-Version a request is an A2A 0.3 request (node/a2a03_test.go):
	// a 1.0 method is not one; a version the bridge does not speak is refused.
	for version, want := range map[string]string{"": `"code":-32601`, "2.0": `"code":-32009`} {
		req, _ := http.NewRequest(http.MethodPost, ep, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}`))
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"id":7`) {
			t.Fatalf("a request with A2A-Version %q: %s", version, b)
		}
	}
}

// TestA2ASubscribe: a client subscribes to a running task and sees it
// cancelled.
func TestA2ASubscribe(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	ep := "http://" + n.APIAddr() + a2abridge.AgentPath(n.PeerID(), id)
	res, rerr := a2aCall(t, ep, a2abridge.MethodSendMessage, map[string]any{"configuration": map[string]any{"returnImmediately": true},
		"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "slow"}}}})
	var sent a2abridge.SendMessageResponse
	if rerr != nil || json.Unmarshal(res, &sent) != nil || sent.Task == nil {
		t.Fatalf("SendMessage: %s %v", res, rerr)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": a2abridge.MethodSubscribeToTask, "params": map[string]any{"id": sent.Task.ID}})
	req, _ := http.NewRequest(http.MethodPost, ep, bytes.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("SubscribeToTask answered %s", ct)
	}
	if _, rerr := a2aCall(t, ep, a2abridge.MethodCancelTask, map[string]any{"id": sent.Task.ID}); rerr != nil {
		t.Fatal(rerr)
	}
	// The stream ends after the task did: the last event is the cancellation.
	b, _ := io.ReadAll(resp.Body)
	events := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	last := events[len(events)-1]
	if !strings.HasPrefix(events[0], "data: ") || !strings.Contains(last, `"statusUpdate"`) || !strings.Contains(last, a2abridge.StateCanceled) {
		t.Fatalf("stream:\n%s", b)
	}
}

// a2aJSDir holds the scripts that run the official A2A JavaScript SDK
// (@a2a-js/sdk, pinned in package-lock.json) against the bridge.
var a2aJSDir = filepath.Join("..", "scripts", "interop", "a2a")

// a2aJS runs script with request req and decodes its one line of JSON.
func a2aJS(t *testing.T, script string, req map[string]any) map[string]any {
	t.Helper()
	testnet.NPM(t, a2aJSDir)
	arg, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, string(arg))
	cmd.Dir = a2aJSDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, errb.Bytes())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%s printed %q: %v\n%s", script, out.Bytes(), err, errb.Bytes())
	}
	if e, ok := v["error"]; ok {
		t.Fatalf("%s failed: %v\n%s", script, e, errb.Bytes())
	}
	return v
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestA2AJSClient: the official A2A JavaScript SDK client against node B
// fetches and verifies the card of an agent hosted on node A, sends it a
// message, streams a response, gets and cancels a task; and finds the
// agent among the skills of B's own card.
func TestA2AJSClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	path := a2abridge.AgentPath(owner.PeerID(), id)
	got := a2aJS(t, "client.mjs", map[string]any{"task": "agent", "base": base, "agent": path, "thingId": id})

	for what, want := range map[string]string{
		"card":     `{"name":"ChatAgent","skills":["chat"],"url":"` + base + path + `","verified":true}`,
		"send":     `{"artifacts":["HELLO"],"state":"TASK_STATE_COMPLETED"}`,
		"stream":   `["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:a","artifact:stream:b","artifact:stream:c","artifact:result:abc","status:TASK_STATE_COMPLETED"]`,
		"cancel":   `{"after":"TASK_STATE_CANCELED","cancelled":"TASK_STATE_CANCELED","got":"TASK_STATE_WORKING"}`,
		"nodeCard": `{"skills":["` + owner.PeerID().String() + `/` + id + `"],"verified":true}`,
		"nodeCall": `{"artifacts":["VIA THE NODE"],"state":"TASK_STATE_COMPLETED"}`,
	} {
		if s := jsonOf(got[what]); s != want {
			t.Errorf("%s: got %s\nwant %s", what, s, want)
		}
	}
}

// TestA2ASession: a streaming conversation with the SDK's client is an
// LMOS streaming session of an agent on another node.
func TestA2ASession(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aSessionAgent)
	got := a2aJS(t, "client.mjs", map[string]any{"task": "session", "base": "http://" + consumer.APIAddr(), "agent": a2abridge.AgentPath(owner.PeerID(), id)})
	want := `{"events":["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:HELLO","artifact:stream:WORLD","artifact:stream:**","status:TASK_STATE_COMPLETED"],` +
		`"history":3,"last":"TASK_STATE_COMPLETED","more":"TASK_STATE_WORKING"}`
	if s := jsonOf(got["session"]); s != want {
		t.Fatalf("session: got %s\nwant %s", s, want)
	}
}

// TestA2AToken: with the API token set, the cards declare the bearer
// scheme (and stay verifiable), the SDK's client that sends the token
// calls the agent, and one without it gets nothing.
func TestA2AToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-a2a"
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIToken = token }}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	req := map[string]any{"task": "call", "base": "http://" + n.APIAddr(), "agent": a2abridge.AgentPath(n.PeerID(), id), "input": "token"}
	req["token"] = token
	got := a2aJS(t, "client.mjs", req)
	if s := jsonOf(got["call"]); s != `{"artifacts":["TOKEN"],"state":"TASK_STATE_COMPLETED"}` {
		t.Fatalf("call with the token: %s", s)
	}
	if s := jsonOf(got["security"]); !strings.Contains(s, `"httpAuthSecurityScheme":{`) || !strings.Contains(s, `"scheme":"Bearer"`) || !strings.Contains(s, `"verified":true`) {
		t.Fatalf("card security: %s", s)
	}
	delete(req, "token")
	got = a2aJS(t, "client.mjs", req)
	if s := jsonOf(got["call"]); !strings.Contains(s, `"error"`) || !strings.Contains(s, "401") || strings.Contains(s, "TOKEN") {
		t.Fatalf("call without the token: %s", s)
	}
}

// TestA2AImport: an A2A agent built with the official A2A JavaScript
// SDK's server is imported on node A (its card read, an lmos:Agent
// published) and called from node B through the HTTP binding and through
// B's A2A bridge with the SDK's client.
func TestA2AImport(t *testing.T) {
	testnet.NPM(t, a2aJSDir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "agent.mjs")
	cmd.Dir = a2aJSDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	var agent struct{ URL string }
	if err := json.NewDecoder(stdout).Decode(&agent); err != nil {
		t.Fatalf("agent.mjs: %v\n%s", err, errb.Bytes())
	}

	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer := net.Nodes[0], net.Nodes[1]
	// The SDK's agent serves an unsigned card: refused unless allowed.
	importCard := func(req map[string]any) (int, []byte) {
		body, _ := json.Marshal(req)
		resp, err := httpapi.BearerClient(owner.APIToken()).Post("http://"+owner.APIAddr()+a2abridge.PathImports, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	cardURL := agent.URL + ".well-known/agent-card.json"
	if code, b := importCard(map[string]any{"card": cardURL}); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "unsigned") {
		t.Fatalf("import of an unsigned card: %d %s", code, b)
	}
	code, b := importCard(map[string]any{"card": cardURL, "allowUnsigned": true})
	var imp a2abridge.ImportResult
	if code != http.StatusCreated || json.Unmarshal(b, &imp) != nil || imp.Endpoint != agent.URL || imp.CardSignature.Status != a2abridge.CardUnsigned {
		t.Fatalf("import: %d %s", code, b)
	}
	td, ok := owner.Things().TD(imp.ThingID)
	if !ok || !td.IsAgent() || td.Title != "EchoAgent" || len(td.Capabilities) != 1 || td.Capabilities[0].ID != "echo" ||
		string(td.Extra[a2abridge.PropCardSignature]) != `{"status":"unsigned"}` {
		t.Fatalf("imported TD %+v", td)
	}

	net.Link(1, 0)
	testnet.WaitFor(t, "B learns the imported agent", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(imp.ThingID)) > 0, "not yet"
	})
	// Through B's HTTP binding: A forwards the invocation over A2A.
	resp, err := http.Post("http://"+consumer.APIAddr()+"/things/"+imp.ThingID+"/actions/"+a2abridge.ActionMessage, "application/json", strings.NewReader(`"hi"`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	// The streaming agent's first chunk makes the invocation long-running
	// (201 with its status URL), which ends completed with the whole text.
	var st struct{ Status, Href string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &st) != nil {
		t.Fatalf("HTTP binding: %d %s", resp.StatusCode, b)
	}
	testnet.WaitFor(t, "the invocation completes", 10*time.Second, func() (bool, string) {
		_, b = getJSONBody(t, "http://"+consumer.APIAddr()+st.Href)
		return strings.Contains(string(b), `"completed"`), string(b)
	})
	if string(b) != `{"status":"completed","output":"echo: hi"}` {
		t.Fatalf("HTTP binding: %s", b)
	}
	// Through B's A2A bridge, with the SDK's client: A2A → LMOS → A2A; the
	// artifact "stream" holds the chunks passed on (all but the last of the
	// agent's artifact), "result" the final output.
	got := a2aJS(t, "client.mjs", map[string]any{"task": "call", "base": "http://" + consumer.APIAddr(),
		"agent": a2abridge.AgentPath(owner.PeerID(), imp.ThingID), "input": "hey"})
	if s := jsonOf(got["call"]); s != `{"artifacts":["echo: ","echo: hey"],"state":"TASK_STATE_COMPLETED"}` {
		t.Fatalf("A2A call: %s", s)
	}
}

// TestA2AGroupScoped: an agent restricted to a group is an A2A agent for
// the members' nodes and for nobody else: node B, not a member, neither
// lists it, nor serves its card, nor calls it, at the per-agent and at the
// node-wide endpoint.
func TestA2AGroupScoped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net := testnet.New(t, 3, testnet.Options{})
	owner, outsider, member := net.Nodes[0], net.Nodes[1], net.Nodes[2]
	net.Link(1, 0)
	net.Link(2, 0)
	info, err := owner.Groups().Create(ctx, "a2a-members", nil)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := owner.Groups().Invite(info.ID, groupsvc.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := member.Groups().Join(ctx, token); err != nil || res.Pending {
		t.Fatalf("join: %+v, %v", res, err)
	}
	testnet.WaitFor(t, "two members on the member nodes", waitLong, testnet.All([]*node.Node{owner, member}, hasMembers(info.ID, owner, member)))
	id := testnet.UniqueID(t)
	a2aAgent(t, owner, id, info.ID)
	public := testnet.UniqueID(t)
	a2aAgent(t, owner, public)
	testnet.WaitFor(t, "the member and the outsider learn what they may", waitLong, func() (bool, string) {
		return len(member.Directory().Lookup(id)) > 0 && len(outsider.Directory().Lookup(public)) > 0, "not yet"
	})
	path := a2abridge.AgentPath(owner.PeerID(), id)
	hello := map[string]any{"message": map[string]any{"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "secret"}}}}

	// The member's node serves the agent.
	base := "http://" + member.APIAddr()
	if _, b := getJSONBody(t, base+"/a2a/agents"); !strings.Contains(string(b), id) {
		t.Fatalf("member's index lacks the agent: %s", b)
	}
	res, rerr := a2aCall(t, base+path, a2abridge.MethodSendMessage, hello)
	if rerr != nil || !strings.Contains(string(res), "SECRET") {
		t.Fatalf("member's call: %s %v", res, rerr)
	}

	// The outsider's does not.
	base = "http://" + outsider.APIAddr()
	_, idx := getJSONBody(t, base+"/a2a/agents")
	_, card := getJSONBody(t, base+a2abridge.WellKnownCard)
	if strings.Contains(string(idx), id) || strings.Contains(string(card), id) || !strings.Contains(string(idx), public) {
		t.Fatalf("outsider lists the group's agent:\n%s\n%s", idx, card)
	}
	if status, b := getJSONBody(t, base+path+".well-known/agent-card.json"); status != http.StatusNotFound {
		t.Fatalf("outsider serves the card: %d %s", status, b)
	}
	res, rerr = a2aCall(t, base+path, a2abridge.MethodSendMessage, hello)
	if rerr == nil || rerr.Code != a2abridge.CodeServer || strings.Contains(string(res), "SECRET") {
		t.Fatalf("outsider's call: %s %v", res, rerr)
	}
	md := map[string]any{"lmos:agent": id, "lmos:publisher": owner.PeerID().String()}
	hello["message"].(map[string]any)["metadata"] = md
	res, rerr = a2aCall(t, base+a2abridge.PathPrefix, a2abridge.MethodSendMessage, hello)
	if rerr == nil || strings.Contains(string(res), "SECRET") {
		t.Fatalf("outsider's call at the node-wide endpoint: %s %v", res, rerr)
	}
}

// TestA2AImportPersists: node B imports an agent of node A through A's
// A2A bridge (no libp2p between them), calls it through its HTTP binding,
// and still forwards calls to it after a restart.
func TestA2AImportPersists(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, owner, id)
	card := "http://" + owner.APIAddr() + a2abridge.AgentPath(owner.PeerID(), id) + ".well-known/agent-card.json"

	cfg := testnet.Config(t)
	start := func() *node.Node {
		n, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}
	call := func(n *node.Node, thingID string) string {
		resp, err := http.Post("http://"+n.APIAddr()+"/things/"+thingID+"/actions/"+a2abridge.ActionMessage, "application/json", strings.NewReader(`"persist"`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	b := start()
	// The owner's card is signed by the owner (a jku on plain http, not
	// followed): it verifies with the owner's JWKS pinned.
	code, jwks := getJSONBody(t, "http://"+owner.APIAddr()+"/a2a/jwks.json")
	if code != http.StatusOK {
		t.Fatalf("JWKS: %d %s", code, jwks)
	}
	api := apiclient.New("http://"+b.APIAddr(), httpapi.BearerClient(b.APIToken()))
	if _, err := api.ImportA2A(ctx, a2abridge.ImportRequest{Card: card}); err == nil || !strings.Contains(err.Error(), "not on the card's https origin") {
		t.Fatalf("import without the key: %v", err)
	}
	imp, err := api.ImportA2A(ctx, a2abridge.ImportRequest{Card: card, Keys: jwks})
	if err != nil {
		t.Fatal(err)
	}
	ownerKey, _ := lmosproto.Ed25519FromPeerID(owner.PeerID())
	if want := lmosproto.DIDKeyVerificationMethod(ownerKey); imp.CardSignature != (a2abridge.CardTrust{Status: a2abridge.CardVerified, Kid: want, Key: "pinned"}) {
		t.Fatalf("card signature %+v, want kid %s", imp.CardSignature, want)
	}
	if td, ok := b.Things().TD(imp.ThingID); !ok || !strings.Contains(string(td.Extra[a2abridge.PropCardSignature]), `"status":"verified"`) {
		t.Fatalf("imported TD %+v", td)
	}
	if got := call(b, imp.ThingID); got != `"PERSIST"` {
		t.Fatalf("call: %s", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = start()
	t.Cleanup(func() { b.Close() })
	if got := call(b, imp.ThingID); got != `"PERSIST"` {
		t.Fatalf("call after restart: %s", got)
	}
}

// TestA2ADemoWeather: the README's example, the demo's WeatherAgent (three
// actions) asked over A2A: metadata names the action, the text fills its
// one required string; an unknown place fails the task with the problem.
func TestA2ADemoWeather(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	w := demo.NewWeather()
	if _, err := n.Register(w.TD, w.Thing); err != nil {
		t.Fatal(err)
	}
	ep := "http://" + n.APIAddr() + a2abridge.AgentPath(n.PeerID(), w.TD.ID)
	ask := func(place string) a2abridge.Task {
		res, rerr := a2aCall(t, ep, a2abridge.MethodSendMessage, map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": place}}, "metadata": map[string]any{"lmos:action": "getWeather"}}})
		var sent a2abridge.SendMessageResponse
		if rerr != nil || json.Unmarshal(res, &sent) != nil || sent.Task == nil {
			t.Fatalf("SendMessage %s: %s %v", place, res, rerr)
		}
		return *sent.Task
	}
	if task := ask("Bonn"); task.Status.State != a2abridge.StateCompleted || !strings.HasPrefix(*task.Artifacts[0].Parts[0].Text, "Bonn today: sunny") {
		t.Fatalf("Bonn: %+v", task)
	}
	task := ask("Atlantis")
	if task.Status.State != a2abridge.StateFailed || task.Status.Message == nil || *task.Status.Message.Parts[0].Text != "Atlantis" ||
		!strings.Contains(string(task.Status.Message.Parts[1].Data), `"status":404`) {
		t.Fatalf("Atlantis: %s", jsonOf(task))
	}
}
