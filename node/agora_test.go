package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/aitp"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

const decisionsURL = "https://aitp.dev/capabilities/aitp-02-decisions/v1.0.0/schema.json"

// agoraAgent registers on n an lmos:Agent with one action "talk" (input
// a string), a streaming session that answers each chunk in upper case,
// or, for an AITP decision (a JSON text naming the decisions schema), with
// a decision request; its TD declares the AITP decisions capability.
func agoraAgent(t testing.TB, n *node.Node, id string, groups ...string) {
	t.Helper()
	td := testnet.TD(t, id, "TalkAgent", "talk")
	td.Description = "Talks back in upper case."
	td.Groups = groups
	td.Extra = map[string]json.RawMessage{aitp.PropCapabilities: json.RawMessage(`["` + decisionsURL + `"]`)}
	td.Actions = map[string]*lmosproto.ActionAffordance{"talk": {
		Description: "Say something.",
		Input:       json.RawMessage(`{ "type": "string", "maxLength": 1000 }`),
		Output:      json.RawMessage(`{"type":"string"}`),
		Forms:       []lmosproto.Form{{Href: "https://agent.invalid/talk"}},
	}}
	thing := interact.NewThing().OnStream("talk", func(ctx context.Context, in <-chan lmosproto.Value, out func(lmosproto.Value) error) error {
		for v := range in {
			var s string
			if err := v.Decode(&s); err != nil {
				return err
			}
			reply := strings.ToUpper(s)
			if strings.Contains(s, decisionsURL) {
				reply = `{"$schema":"` + decisionsURL + `","request_decision":{"id":"seat","type":"radio","options":[{"id":"a","name":"Aisle"},{"id":"w","name":"Window"}]}}`
			}
			if err := out(lmosproto.StringValue(reply)); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := n.Register(td, thing); err != nil {
		t.Fatal(err)
	}
}

// TestAgoraHashAcrossNodes: the protocol document of an agent's action,
// rendered by its owner and by another node, is the same text with the
// same SHA1.
func TestAgoraHashAcrossNodes(t *testing.T) {
	owner, consumer, id := a2aPair(t, agoraAgent)
	var docs []map[string][]string
	for _, n := range []*node.Node{owner, consumer} {
		status, b := getJSONBody(t, "http://"+n.APIAddr()+agora.AgentPath(owner.PeerID(), id)+"/wellknown")
		var m map[string][]string
		if status != http.StatusOK || json.Unmarshal(b, &m) != nil || len(m) != 1 {
			t.Fatalf("wellknown of %s: %d %s", n.PeerID(), status, b)
		}
		docs = append(docs, m)
	}
	if jsonOf(docs[0]) != jsonOf(docs[1]) {
		t.Fatalf("the nodes render different documents:\n%s\n%s", jsonOf(docs[0]), jsonOf(docs[1]))
	}
	for hash, src := range docs[0] {
		if agora.Hash(strings.Join(src, "")) != hash {
			t.Fatalf("hash %s is not the SHA1 of its document", hash)
		}
		status, b := getJSONBody(t, "http://"+consumer.APIAddr()+agora.PathProtocols+"/"+hash)
		if status != http.StatusOK || string(b) != src[0] {
			t.Fatalf("GET protocol by hash: %d %s", status, b)
		}
		t.Logf("protocol %s:\n%s", hash, b)
	}
}

// TestAgoraAITPJSClient: a client written from the Agora and AITP texts
// (scripts/interop/agora-aitp) talks to an agent of node A through node
// B: protocol document and hash, a protocol request, natural language, a
// multi-round conversation (an LMOS streaming session), and an AITP
// thread whose capability messages it checks against the official
// schemas with ajv (one the agent does not declare and one that breaks
// its schema are refused).
func TestAgoraAITPJSClient(t *testing.T) {
	owner, consumer, id := a2aPair(t, agoraAgent)
	dir := filepath.Join("..", "scripts", "interop", "agora-aitp")
	testnet.NPM(t, dir)
	arg := jsonOf(map[string]string{"base": "http://" + consumer.APIAddr(),
		"agora": agora.AgentPath(owner.PeerID(), id), "aitp": aitp.AgentPath(owner.PeerID(), id)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", arg)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.Bytes())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || got["error"] != nil {
		t.Fatalf("client.mjs: %s %v\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	t.Logf("client.mjs: %s", stdout.Bytes())
	for what, want := range map[string]string{
		"protocolCall":        `{"body":"HELLO","status":"success"}`,
		"protocolError":       `{"hasError":true,"status":"success"}`,
		"unsupported":         `{"error":"Unsupported protocol","http":200,"status":"failure"}`,
		"naturalLanguage":     `{"body":"WHAT IS UP","status":"success"}`,
		"conversation":        `{"rounds":["ONE","TWO","THREE",null],"sameId":true}`,
		"changeProtocol":      `400`,
		"unknownConversation": `404`,
		"agentActor":          `["` + decisionsURL + `"]`,
		"refused":             `{"code":"capability_not_supported","hasMessage":true,"http":400,"type":"invalid_request_error"}`,
		"invalid":             `{"code":"invalid_capability_message","http":400,"param":"content[0]","validLocally":false}`,
		"thread":              `{"count":4,"first":["HELLO THREAD"],"roles":["user","assistant","user","assistant"]}`,
		"replySchema":         `"` + decisionsURL + `"`,
		"replyValid":          `true`,
		"retrieved":           `4`,
		"initial":             `["user:first words","assistant:FIRST WORDS"]`,
	} {
		if s := jsonOf(got[what]); s != want {
			t.Errorf("%s: got %s\nwant %s", what, s, want)
		}
	}
	p := got["protocol"].(map[string]any)
	if p["name"] != "TalkAgent: talk" || p["multiround"] != true || p["hasDescription"] != true {
		t.Errorf("protocol metadata: %v", p)
	}
	a := got["agent"].(map[string]any)
	if jsonOf(a["capabilities"]) != `["`+decisionsURL+`"]` || len(a["unsupported"].([]any)) != 4 {
		t.Errorf("agent capabilities: %v", a)
	}
}

// TestAgoraGroupScoped: an agent restricted to a group has Agora and
// AITP endpoints on its members' nodes only: node B, not a member,
// serves neither its documents nor its endpoints.
func TestAgoraGroupScoped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	net := testnet.New(t, 2, testnet.Options{})
	owner, outsider := net.Nodes[0], net.Nodes[1]
	net.Link(1, 0)
	info, err := owner.Groups().Create(ctx, "agora-members", nil)
	if err != nil {
		t.Fatal(err)
	}
	id, public := testnet.UniqueID(t), testnet.UniqueID(t)
	agoraAgent(t, owner, id, info.ID)
	agoraAgent(t, owner, public)
	testnet.WaitFor(t, "the outsider learns the public agent", waitLong, func() (bool, string) {
		return len(outsider.Directory().Lookup(public)) > 0, "not yet"
	})
	post := func(url, body string) (int, string) {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	// The owner, a member, serves it.
	base := "http://" + owner.APIAddr()
	status, wk := getJSONBody(t, base+agora.AgentPath(owner.PeerID(), id)+"/wellknown")
	var m map[string][]string
	if status != http.StatusOK || json.Unmarshal(wk, &m) != nil || len(m) != 1 {
		t.Fatalf("member's wellknown: %d %s", status, wk)
	}
	if s, b := post(base+agora.AgentPath(owner.PeerID(), id), `{"body":"secret"}`); s != http.StatusOK || !strings.Contains(b, "SECRET") {
		t.Fatalf("member's call: %d %s", s, b)
	}
	// The outsider does not.
	base = "http://" + outsider.APIAddr()
	for hash := range m {
		if s, b := getJSONBody(t, base+agora.PathProtocols+"/"+hash); s != http.StatusNotFound {
			t.Errorf("outsider serves the group agent's protocol: %d %s", s, b)
		}
	}
	if s, b := getJSONBody(t, base+agora.AgentPath(owner.PeerID(), id)+"/wellknown"); s != http.StatusNotFound {
		t.Errorf("outsider serves the wellknown: %d %s", s, b)
	}
	if s, b := post(base+agora.AgentPath(owner.PeerID(), id), `{"body":"secret"}`); s != http.StatusNotFound || strings.Contains(b, "SECRET") {
		t.Errorf("outsider's Agora call: %d %s", s, b)
	}
	if s, b := post(base+aitp.AgentPath(owner.PeerID(), id)+"/v1/thread", `{"messages":["secret"]}`); s != http.StatusNotFound || !strings.Contains(b, `"code":"not_found"`) {
		t.Errorf("outsider's AITP thread: %d %s", s, b)
	}
	if s, b := post(base+agora.AgentPath(owner.PeerID(), public), `{"body":"public"}`); s != http.StatusOK || !strings.Contains(b, "PUBLIC") {
		t.Errorf("outsider's call of the public agent: %d %s", s, b)
	}
}
