package node_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2apb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// rest03Err is the error body of the 0.3 HTTP+JSON binding.
type rest03Err struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// decode03 decodes body, the proto JSON form of the 0.3 HTTP+JSON
// binding, into m with a2a-go's generated 0.3 types (which name a
// message's parts "parts", the specification's 0.3.0 proto "content").
func decode03(t *testing.T, what, body string, m proto.Message) {
	t.Helper()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(body), m); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
}

// stream03 posts a message:stream and returns its events, each as its
// kind and state or artifact text.
func stream03(t *testing.T, url, body string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("message:stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev a2apb.StreamResponse
		decode03(t, "stream event", data, &ev)
		switch {
		case ev.GetTask() != nil:
			events = append(events, "task:"+ev.GetTask().GetStatus().GetState().String())
		case ev.GetStatusUpdate() != nil:
			u := ev.GetStatusUpdate()
			s := "status:" + u.GetStatus().GetState().String()
			if u.GetFinal() {
				s += ":final"
			}
			events = append(events, s)
		case ev.GetArtifactUpdate() != nil:
			a := ev.GetArtifactUpdate().GetArtifact()
			events = append(events, "artifact:"+a.GetName()+":"+a.GetParts()[0].GetText())
		}
	}
	return events
}

// TestA2A03RESTGo drives A2A 0.3's HTTP+JSON binding (proto JSON, paths
// /v1/…) with plain HTTP, decoding with a2a-go's generated 0.3 types: an
// agent of node A called through node B's card and routes: send, stream,
// get, cancel, an unknown task, push configs and the extended card
// refused with 0.3's errors and HTTP statuses; the node-wide base.
func TestA2A03RESTGo(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	ep := base + a2abridge.AgentPath(owner.PeerID(), id)
	rest := strings.TrimSuffix(ep, "/") + "/v0.3"

	var card a2abridge.AgentCard
	if code, b := getJSONBody(t, ep+".well-known/agent-card.json"); code != http.StatusOK || json.Unmarshal(b, &card) != nil {
		t.Fatalf("card: %d %s", code, b)
	}
	if card.PreferredTransport != "JSONRPC" || card.URL != ep ||
		!slices.Contains(card.AdditionalInterfaces, a2abridge.AgentInterfaceV03{URL: rest, Transport: "HTTP+JSON"}) ||
		!slices.Contains(card.AdditionalInterfaces, a2abridge.AgentInterfaceV03{URL: ep, Transport: "JSONRPC"}) {
		t.Fatalf("0.3 card: %+v", card.CardV03)
	}
	if pub, _ := lmosproto.Ed25519FromPeerID(consumer.PeerID()); pub == nil {
		t.Fatal("no key")
	} else if _, err := a2abridge.VerifyCard(card, pub); err != nil {
		t.Fatal(err)
	}

	code, ct, body := a2aREST(t, http.MethodPost, rest+"/v1/message:send", `{"message":{"messageId":"m1","role":"ROLE_USER","content":[{"text":"hello"}]}}`, "A2A-Version", "")
	var sent a2apb.SendMessageResponse
	decode03(t, "message:send", body, &sent)
	task := sent.GetTask()
	if code != http.StatusOK || !strings.HasPrefix(ct, "application/json") || task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED ||
		task.GetArtifacts()[0].GetParts()[0].GetText() != "HELLO" || task.GetHistory()[0].GetRole() != a2apb.Role_ROLE_USER ||
		!strings.Contains(body, `"content":[{"text":"hello"}]`) {
		t.Fatalf("message:send: %d %s %s", code, ct, body)
	}
	// a2a-go's later 0.3 proto names a message's parts "parts": taken too.
	if code, _, body := a2aREST(t, http.MethodPost, rest+"/v1/message:send", `{"message":{"messageId":"m0","role":"ROLE_USER","parts":[{"text":"parts"}]}}`); code != http.StatusOK ||
		!strings.Contains(body, `"text":"PARTS"`) {
		t.Fatalf("message:send with parts: %d %s", code, body)
	}
	if !slices.Contains(card.SupportedInterfaces, a2abridge.AgentInterface{URL: rest, ProtocolBinding: "HTTP+JSON", ProtocolVersion: "0.3"}) {
		t.Fatalf("1.0 interfaces: %+v", card.SupportedInterfaces)
	}
	code, _, body = a2aREST(t, http.MethodGet, rest+"/v1/tasks/"+task.GetId()+"?historyLength=0", "")
	var got a2apb.Task
	decode03(t, "GET task", body, &got)
	if code != http.StatusOK || got.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED || len(got.GetHistory()) != 0 {
		t.Fatalf("GET task: %d %s", code, body)
	}

	events := stream03(t, rest+"/v1/message:stream", `{"message":{"messageId":"m2","role":"ROLE_USER","content":[{"text":"stream"}]}}`)
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact:stream:a", "artifact:stream:b", "artifact:stream:c",
		"artifact:result:abc", "status:TASK_STATE_COMPLETED:final"}
	if !slices.Equal(events, want) {
		t.Fatalf("message:stream: %q, want %q", events, want)
	}

	// Cancel a task that works until cancelled (blocking false: answered
	// at once).
	_, _, body = a2aREST(t, http.MethodPost, rest+"/v1/message:send",
		`{"message":{"messageId":"m3","role":"ROLE_USER","content":[{"text":"slow"}]},"configuration":{"blocking":false}}`)
	var slow a2apb.SendMessageResponse
	decode03(t, "slow message:send", body, &slow)
	code, _, body = a2aREST(t, http.MethodPost, rest+"/v1/tasks/"+slow.GetTask().GetId()+":cancel", "")
	var cancelled a2apb.Task
	decode03(t, "cancel", body, &cancelled)
	if code != http.StatusOK || cancelled.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_CANCELLED {
		t.Fatalf("cancel: %d %s", code, body)
	}

	node := base + a2abridge.PathPrefix + "/v0.3"
	code, _, body = a2aREST(t, http.MethodPost, node+"/v1/message:send",
		`{"message":{"messageId":"m4","role":"ROLE_USER","content":[{"text":"via the node"}]},"metadata":{"lmos:agent":"`+id+`"}}`)
	var viaNode a2apb.SendMessageResponse
	decode03(t, "node-wide message:send", body, &viaNode)
	if code != http.StatusOK || viaNode.GetTask().GetArtifacts()[0].GetParts()[0].GetText() != "VIA THE NODE" {
		t.Fatalf("node-wide message:send: %d %s", code, body)
	}
	if code, _, body := a2aREST(t, http.MethodGet, node+"/v1/tasks/"+viaNode.GetTask().GetId(), ""); code != http.StatusOK || !strings.Contains(body, "TASK_STATE_COMPLETED") {
		t.Fatalf("node-wide GET task: %d %s", code, body)
	}

	for _, tc := range []struct {
		name, method, url, body string
		status, code            int
	}{
		{"unknown task", "GET", rest + "/v1/tasks/no-such-task", "", 404, -32001},
		{"cancel a completed task", "POST", rest + "/v1/tasks/" + task.GetId() + ":cancel", "", 400, -32002},
		{"subscribe to a completed task", "GET", rest + "/v1/tasks/" + task.GetId() + ":subscribe", "", 400, -32004},
		{"set a push config", "POST", rest + "/v1/tasks/" + task.GetId() + "/pushNotificationConfigs", `{"url":"https://x.invalid"}`, 400, -32003},
		{"list push configs", "GET", rest + "/v1/tasks/" + task.GetId() + "/pushNotificationConfigs", "", 400, -32003},
		{"delete a push config", "DELETE", node + "/v1/tasks/" + task.GetId() + "/pushNotificationConfigs/c1", "", 400, -32003},
		{"extended card", "GET", rest + "/v1/card", "", 400, -32007},
		{"not JSON", "POST", rest + "/v1/message:send", `{"message":`, 400, -32700},
		{"no message", "POST", rest + "/v1/message:send", `{}`, 400, -32602},
		{"no operation", "POST", rest + "/v1/tasks/" + task.GetId(), "", 404, -32601},
	} {
		code, ct, body := a2aREST(t, tc.method, tc.url, tc.body)
		var e rest03Err
		if code != tc.status || !strings.HasPrefix(ct, "application/json") || json.Unmarshal([]byte(body), &e) != nil || e.Code != tc.code || e.Message == "" {
			t.Errorf("%s: %d %s %s", tc.name, code, ct, body)
		}
	}

	// The node's browser consent, as on the other routes.
	msg := `{"message":{"messageId":"m5","role":"ROLE_USER","content":[{"text":"x"}]}}`
	if code, _, body := a2aREST(t, http.MethodPost, rest+"/v1/message:send", msg, "Content-Type", "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d %s", code, body)
	}
	if code, _, body := a2aREST(t, http.MethodPost, node+"/v1/message:send", msg, "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("foreign origin: %d %s", code, body)
	}
}

// TestA2A03JSRESTClient: the A2A JavaScript SDK's 0.3 HTTP+JSON
// transport (its only transport here), picked from the card's 0.3
// additionalInterfaces, calls an agent of node A through node B: send,
// stream, get, resubscribe, cancel, an unknown task; and the node-wide
// base from B's own card.
func TestA2A03JSRESTClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, a2aAgent)
	base := "http://" + consumer.APIAddr()
	path := a2abridge.AgentPath(owner.PeerID(), id)
	got := a2aJS(t, "client03.mjs", map[string]any{"base": base, "agent": path, "thingId": id, "binding": "rest"})
	for what, want := range map[string]string{
		"card":     `{"preferredTransport":"JSONRPC","protocolVersion":"0.3.0","transport":"0.3","url":"` + base + path + `"}`,
		"send":     `{"artifacts":["HELLO"],"state":"TASK_STATE_COMPLETED"}`,
		"stream":   `["task:TASK_STATE_SUBMITTED","status:TASK_STATE_WORKING","artifact:stream:a","artifact:stream:b","artifact:stream:c","artifact:result:abc","status:TASK_STATE_COMPLETED"]`,
		"cancel":   `{"after":"TASK_STATE_CANCELED","cancelled":"TASK_STATE_CANCELED","got":"TASK_STATE_WORKING","resubscribed":["task:TASK_STATE_WORKING","status:TASK_STATE_CANCELED"]}`,
		"wire":     `["POST /v1/message:send","POST /v1/message:stream","GET /v1/tasks/{id}","GET /v1/tasks/{id}:subscribe","POST /v1/tasks/{id}:cancel"]`,
		"nodeCall": `{"artifacts":["VIA THE NODE"],"state":"TASK_STATE_COMPLETED"}`,
	} {
		if s := jsonOf(got[what]); s != want {
			t.Errorf("%s: got %s\nwant %s", what, s, want)
		}
	}
	if s, _ := got["unknownTask"].(string); !strings.Contains(s, "not found") {
		t.Errorf("GET of an unknown task: %v", got["unknownTask"])
	}
}
