package node_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/config"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// a2aREST makes a request of the A2A bridge's HTTP+JSON binding and
// returns the status, the Content-Type and the body; hdr are header
// name, value pairs (A2A-Version 1.0 and Content-Type application/json
// unless set).
func a2aREST(t *testing.T, method, url, body string, hdr ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// restErr is the error body of the HTTP+JSON binding.
type restErr struct {
	Error struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Type     string            `json:"@type"`
			Reason   string            `json:"reason"`
			Domain   string            `json:"domain"`
			Metadata map[string]string `json:"metadata"`
		} `json:"details"`
	} `json:"error"`
}

// TestA2ARESTGo drives the HTTP+JSON binding with plain HTTP: the cards
// list it, a message and its task, and every error as its HTTP status
// with the google.rpc.Status body of the specification (§11.6); requests
// pass the node's browser consent like the JSON-RPC binding's.
func TestA2ARESTGo(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	base := "http://" + n.APIAddr()
	ep := base + strings.TrimSuffix(a2abridge.AgentPath(n.PeerID(), id), "/")

	var card a2abridge.AgentCard
	if code, b := getJSONBody(t, ep+"/.well-known/agent-card.json"); code != http.StatusOK || json.Unmarshal(b, &card) != nil {
		t.Fatalf("card: %d %s", code, b)
	}
	if !slices.ContainsFunc(card.SupportedInterfaces, func(i a2abridge.AgentInterface) bool {
		return i.ProtocolBinding == a2abridge.BindingHTTPJSON && i.URL == ep && i.ProtocolVersion == "1.0"
	}) {
		t.Fatalf("interfaces: %+v", card.SupportedInterfaces)
	}
	if pub, _ := lmosproto.Ed25519FromPeerID(n.PeerID()); pub == nil {
		t.Fatal("no key")
	} else if _, err := a2abridge.VerifyCard(card, pub); err != nil {
		t.Fatal(err)
	}
	var nodeCard a2abridge.AgentCard
	if code, b := getJSONBody(t, base+a2abridge.WellKnownCard); code != http.StatusOK || json.Unmarshal(b, &nodeCard) != nil ||
		!slices.ContainsFunc(nodeCard.SupportedInterfaces, func(i a2abridge.AgentInterface) bool {
			return i.ProtocolBinding == a2abridge.BindingHTTPJSON && i.URL == base+a2abridge.PathPrefix
		}) {
		t.Fatalf("node card: %d %s", code, b)
	}

	code, ct, body := a2aREST(t, http.MethodPost, ep+"/message:send", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`)
	var sent a2abridge.SendMessageResponse
	if code != http.StatusOK || ct != a2abridge.ContentTypeA2A || json.Unmarshal([]byte(body), &sent) != nil || sent.Task == nil ||
		sent.Task.Status.State != a2abridge.StateCompleted || *sent.Task.Artifacts[0].Parts[0].Text != "HI" {
		t.Fatalf("message:send: %d %s %s", code, ct, body)
	}
	if code, _, body := a2aREST(t, http.MethodGet, ep+"/tasks/"+sent.Task.ID+"?historyLength=0", ""); code != http.StatusOK ||
		!strings.Contains(body, a2abridge.StateCompleted) || strings.Contains(body, `"history"`) {
		t.Fatalf("GET task: %d %s", code, body)
	}
	if code, _, body := a2aREST(t, http.MethodGet, ep+"/tasks?contextId="+sent.Task.ContextID+"&pageSize=5", ""); code != http.StatusOK ||
		!strings.Contains(body, sent.Task.ID) || !strings.Contains(body, `"totalSize":1`) {
		t.Fatalf("GET tasks: %d %s", code, body)
	}
	node := base + a2abridge.PathPrefix
	if code, _, body := a2aREST(t, http.MethodPost, node+"/message:send",
		`{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"node"}],"metadata":{"lmos:agent":"`+id+`"}}}`); code != http.StatusOK || !strings.Contains(body, `"NODE"`) {
		t.Fatalf("node-wide message:send: %d %s", code, body)
	}

	for _, tc := range []struct {
		name, method, url, body string
		hdr                     []string
		status                  int
		rpcStatus, reason       string
	}{
		{"unknown task", "GET", ep + "/tasks/no-such-task", "", nil, 404, "NOT_FOUND", "TASK_NOT_FOUND"},
		{"cancel a completed task", "POST", ep + "/tasks/" + sent.Task.ID + ":cancel", "", nil, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"},
		{"subscribe to a completed task", "POST", ep + "/tasks/" + sent.Task.ID + ":subscribe", "", nil, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"},
		{"no operation", "POST", ep + "/tasks/" + sent.Task.ID, "", nil, 404, "NOT_FOUND", "METHOD_NOT_FOUND"},
		{"no version", "POST", ep + "/message:send", `{}`, []string{"A2A-Version", "0.3"}, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"},
		{"not JSON", "POST", ep + "/message:send", `{"message":`, nil, 400, "INVALID_ARGUMENT", "PARSE_ERROR"},
		{"no message", "POST", ep + "/message:send", `{}`, nil, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"},
		{"file part", "POST", ep + "/message:stream", `{"message":{"messageId":"f","parts":[{"url":"https://x.invalid/f"}]}}`, nil, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
		{"bad page size", "GET", ep + "/tasks?pageSize=x", "", nil, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"},
		{"extended card", "GET", ep + "/extendedAgentCard", "", nil, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"},
		{"push config", "POST", ep + "/tasks/" + sent.Task.ID + "/pushNotificationConfigs", `{}`, nil, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
		{"task of another agent", "GET", base + strings.TrimSuffix(a2abridge.AgentPath(n.PeerID(), "urn:other"), "/") + "/tasks/" + sent.Task.ID, "", nil, 404, "NOT_FOUND", "TASK_NOT_FOUND"},
		{"unknown agent", "POST", base + strings.TrimSuffix(a2abridge.AgentPath(n.PeerID(), "urn:other"), "/") + "/message:send",
			`{"message":{"messageId":"u","parts":[{"text":"x"}]}}`, nil, 404, "NOT_FOUND", ""},
	} {
		code, ct, body := a2aREST(t, tc.method, tc.url, tc.body, tc.hdr...)
		var e restErr
		if code != tc.status || ct != a2abridge.ContentTypeA2A || json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tc.status ||
			e.Error.Status != tc.rpcStatus || e.Error.Message == "" || len(e.Error.Details) == 0 {
			t.Fatalf("%s: %d %s %s", tc.name, code, ct, body)
		}
		d := e.Error.Details[0]
		if tc.reason != "" && (d.Reason != tc.reason || d.Domain != "a2a-protocol.org" || d.Type != "type.googleapis.com/google.rpc.ErrorInfo") {
			t.Fatalf("%s: details %s", tc.name, body)
		}
		if tc.reason == "" && (d.Domain != "lmosnode" || d.Metadata["status"] != "404") {
			t.Fatalf("%s: the node's problem: %s", tc.name, body)
		}
	}

	// The node's browser consent: a body a web page sends without a
	// preflight, and a call from a foreign page.
	msg := `{"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"x"}]}}`
	if code, _, body := a2aREST(t, http.MethodPost, ep+"/message:send", msg, "Content-Type", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d %s", code, body)
	}
	if code, _, body := a2aREST(t, http.MethodPost, node+"/tasks/"+sent.Task.ID+":cancel", "", "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("foreign origin: %d %s", code, body)
	}
}

// TestA2ARESTToken: with the API token set, the HTTP+JSON binding needs
// it like the JSON-RPC binding.
func TestA2ARESTToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef-rest"
	n := testnet.New(t, 1, testnet.Options{Configure: func(_ int, cfg *config.Config) { cfg.APIToken = token }}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	ep := "http://" + n.APIAddr() + strings.TrimSuffix(a2abridge.AgentPath(n.PeerID(), id), "/")
	msg := `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"t"}]}}`
	if code, _, body := a2aREST(t, http.MethodPost, ep+"/message:send", msg); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d %s", code, body)
	}
	if code, _, body := a2aREST(t, http.MethodPost, ep+"/message:send", msg, "Authorization", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, `"T"`) {
		t.Fatalf("with the token: %d %s", code, body)
	}
}

// TestA2AJSRESTClient: the official A2A JavaScript SDK's client, over its
// HTTP+JSON (REST) transport only, calls an agent of node A through node
// B: send, stream, get, cancel, subscribe, list, the A2A errors as the
// SDK's error classes; and the node-wide endpoint.
func TestA2AJSRESTClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	got := a2aJS(t, "rest.mjs", map[string]any{"base": "http://" + consumer.APIAddr(), "agent": a2abridge.AgentPath(owner.PeerID(), id), "thingId": id})
	want := map[string]string{
		"send":     `{"artifacts":["HELLO"],"state":"TASK_STATE_COMPLETED"}`,
		"stream":   `["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:a","artifact:stream:b","artifact:stream:c","artifact:result:abc","status:TASK_STATE_COMPLETED"]`,
		"cancel":   `{"after":"TASK_STATE_CANCELED","cancelled":"TASK_STATE_CANCELED","got":"TASK_STATE_WORKING","history":1}`,
		"nodeCall": `{"artifacts":["VIA THE NODE"],"state":"TASK_STATE_COMPLETED"}`,
		"nodeGet":  `"TASK_STATE_COMPLETED"`,
		"errors": `{"cancelDone":"TaskNotCancelableError:400","getUnknown":"TaskNotFoundError:404",` +
			`"subscribeDone":"UnsupportedOperationError:400","wrongAction":"RequestMalformedError:400"}`,
	}
	for k, w := range want {
		if s := jsonOf(got[k]); s != w {
			t.Errorf("%s: %s, want %s", k, s, w)
		}
	}
	if s := jsonOf(got["subscribe"]); !strings.HasPrefix(s, `["task:TASK_STATE_WORKING"`) || !strings.HasSuffix(s, `"status:TASK_STATE_CANCELED"]`) {
		t.Errorf("subscribe: %s", s)
	}
	if s := jsonOf(got["list"]); !strings.Contains(s, `"same":true`) || !strings.Contains(s, `"artifacts":["HELLO"]`) {
		t.Errorf("list: %s", s)
	}
	t.Logf("requests of the SDK's REST transport: %s", jsonOf(got["requests"]))
	for _, r := range []string{"POST /a2a/{agent}/message:send", "POST /a2a/{agent}/message:stream", "GET /a2a/{agent}/tasks/{id}",
		"POST /a2a/{agent}/tasks/{id}:cancel", "POST /a2a/{agent}/tasks/{id}:subscribe", "GET /a2a/{agent}/tasks", "POST /a2a/message:send", "GET /a2a/tasks/{id}"} {
		if !strings.Contains(jsonOf(got["requests"]), `"`+r+`"`) {
			t.Errorf("the SDK made no request %s: %s", r, jsonOf(got["requests"]))
		}
	}
}

// TestA2AText: both bindings take JSON text as sent or not at all: a body
// that is not UTF-8, escapes a lone surrogate or names another charset is
// refused as a parse error, not decoded to U+FFFD and forwarded.
func TestA2AText(t *testing.T) {
	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	id := testnet.UniqueID(t)
	a2aAgent(t, n, id)
	ep := "http://" + n.APIAddr() + a2abridge.AgentPath(n.PeerID(), id)
	send := func(text string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}}}`
	}
	for _, c := range []struct{ name, body, ct string }{
		{"invalid UTF-8", send("hi \xff"), "application/json"},
		{"lone surrogate", send(`hi \ud800`), "application/json"},
		{"another charset", send("hi"), "application/json; charset=utf-16"},
	} {
		code, _, body := a2aREST(t, http.MethodPost, ep, c.body, "Content-Type", c.ct)
		var r struct{ Error *a2abridge.RPCError }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || r.Error == nil || r.Error.Code != a2abridge.CodeParseError {
			t.Errorf("JSON-RPC, %s: %d %s, want error %d", c.name, code, body, a2abridge.CodeParseError)
		}
		rest := strings.TrimPrefix(c.body, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`)
		rest = strings.TrimSuffix(rest, "}")
		if code, _, body := a2aREST(t, http.MethodPost, strings.TrimSuffix(ep, "/")+"/message:send", rest, "Content-Type", c.ct); code != http.StatusBadRequest {
			t.Errorf("HTTP+JSON, %s: %d %s, want 400", c.name, code, body)
		}
	}
}
