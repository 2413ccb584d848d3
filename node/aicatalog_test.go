package node_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

var aiCatalogJSDir = filepath.Join("..", "scripts", "interop", "aicatalog")

// catalogAgent registers on n an lmos:Agent of capability capID (scoped
// to groups, if any) whose action "chat" answers in upper case.
func catalogAgent(t *testing.T, n *node.Node, id, capID string, groups ...string) {
	t.Helper()
	td := testnet.TD(t, id, "CatalogAgent", capID)
	td.Groups = groups
	td.Actions = map[string]*lmosproto.ActionAffordance{"chat": {
		Input: json.RawMessage(`{"type":"string"}`), Output: json.RawMessage(`{"type":"string"}`),
		Forms: []lmosproto.Form{{Href: "https://agent.invalid/chat"}},
	}}
	thing := interact.NewThing().OnAction("chat", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var s string
		if err := in.Decode(&s); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.StringValue(strings.ToUpper(s)), nil
	})
	if _, err := n.Register(td, thing); err != nil {
		t.Fatal(err)
	}
}

// postJSON posts v to url and returns the status and body.
func postJSON(t *testing.T, url, token string, v any) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(v)
	resp, err := httpapi.BearerClient(token).Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAICatalog: node B, which neither gossips nor syncs, answers an ARD
// search for an agent that lives only on node A by asking the network;
// then independent tools read B's catalog (scripts/interop/aicatalog):
// ajv validates it, the search results and the ARD conformance examples
// against ARD's JSON Schema and the Server Card against the MCP schema,
// jose verifies every trust manifest as the AI Catalog spec says, and the
// A2A SDK calls A's agent through the card URL of its catalog entry.
func TestAICatalog(t *testing.T) {
	testnet.NPM(t, aiCatalogJSDir)
	nw := testnet.New(t, 2, testnet.Options{Configure: func(i int, cfg *config.Config) {
		if i == 1 {
			cfg.Gossip, cfg.SyncOnConnect = false, false
		}
	}})
	a, b := nw.Nodes[0], nw.Nodes[1]
	id := testnet.UniqueID(t)
	capID := "catalog-" + id[len(id)-6:]
	catalogAgent(t, a, id, capID)
	nw.Link(1, 0)
	if len(b.Directory().Lookup(id)) != 0 {
		t.Fatal("B learned the agent without asking")
	}
	base := "http://" + b.APIAddr()
	search := map[string]any{"query": map[string]any{"text": capID}}
	testnet.WaitFor(t, "B's search finds A's agent in the network", 30*time.Second, func() (bool, string) {
		code, body := postJSON(t, base+aicatalog.PathSearch, b.APIToken(), search)
		return code == http.StatusOK && strings.Contains(string(body), `"lmos:thingId":"`+id+`"`), string(body)
	})
	if code, body := postJSON(t, base+aicatalog.PathSearch, "", map[string]any{"query": map[string]any{}}); code != http.StatusBadRequest || !strings.Contains(string(body), "INVALID_ARGUMENT") {
		t.Fatalf("search without text: %d %s", code, body)
	}

	arg, _ := json.Marshal(map[string]any{"base": base, "thingId": id,
		"search": map[string]any{"query": map[string]any{"text": capID, "filter": map[string]any{"type": "application/a2a-agent-card+json"}}, "federation": "none"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "check.mjs", string(arg))
	cmd.Dir = aiCatalogJSDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, errb.Bytes())
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("check.mjs printed %q: %v", out.Bytes(), err)
	}
	pub, _ := lmosproto.Ed25519FromPeerID(b.PeerID())
	for what, want := range map[string]string{
		"conformance":    `{"ai-catalog.json":"valid","fda-ndc-catalog.json":"valid","local-business-catalog.json":"valid","noaa-weather-catalog.json":"valid"}`,
		"control":        `false`,
		"catalog":        `{"status":200,"type":"application/ai-catalog+json","types":{"application/a2a-agent-card+json":1,"application/ai-registry+json":1,"application/mcp-server-card+json":1},"valid":true}`,
		"serverCard":     `{"url":"` + base + `/mcp","valid":true,"versions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"]}`,
		"signers":        `["` + lmosproto.DIDKey(pub) + `"]`,
		"search":         `{"scores":[100],"status":200,"thingIds":["` + id + `"],"types":{"application/a2a-agent-card+json":1},"valid":true}`,
		"found":          `true`,
		"call":           `["FROM THE CATALOG"]`,
		"tamperAccepted": `null`,
	} {
		if s := jsonOf(got[what]); s != want {
			t.Errorf("%s: got %s\nwant %s", what, s, want)
		}
	}

	// The catalog is rendered once per revision: an If-None-Match of its
	// ETag gets 304.
	resp, err := http.Get(base + aicatalog.PathCatalog)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodGet, base+aicatalog.PathCatalog, nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}

type catalogGreetIn struct {
	Name string `json:"name"`
}

type catalogGreetOut struct {
	Greeting string `json:"greeting"`
}

// catalogMCPServer serves an MCP server of the Go SDK on 127.0.0.1: tool
// greet. It returns the endpoint's URL.
func catalogMCPServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, in catalogGreetIn) (*mcp.CallToolResult, catalogGreetOut, error) {
			return nil, catalogGreetOut{Greeting: "Hello, " + in.Name}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// jsA2AAgent starts the A2A SDK's agent (scripts/interop/a2a/agent.mjs)
// and returns its base URL.
func jsA2AAgent(t *testing.T) string {
	t.Helper()
	testnet.NPM(t, a2aJSDir)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", "agent.mjs")
	cmd.Dir = a2aJSDir
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); cancel(); _ = cmd.Wait() })
	var agent struct{ URL string }
	if err := json.NewDecoder(stdout).Decode(&agent); err != nil {
		t.Fatalf("agent.mjs: %v\n%s", err, errb.Bytes())
	}
	return agent.URL
}

// invokeOutput invokes action of Thing id through n's HTTP binding with
// input and returns its output (waiting for a long-running invocation).
func invokeOutput(t *testing.T, n *node.Node, id, action, input string) string {
	t.Helper()
	base := "http://" + n.APIAddr()
	resp, err := http.Post(base+"/things/"+id+"/actions/"+action, "application/json", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return strings.TrimSpace(string(b))
	}
	var st struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("invoke %s: %d %s", action, resp.StatusCode, b)
	}
	href := resp.Header.Get("Location")
	testnet.WaitFor(t, "the invocation completes", 20*time.Second, func() (bool, string) {
		_, b = getJSONBody(t, base+href)
		_ = json.Unmarshal(b, &st)
		return st.Status == "completed", string(b)
	})
	return string(st.Output)
}

// TestAICatalogImport: an AI Catalog served on 127.0.0.1 lists a real
// A2A agent (the A2A SDK's) and a real MCP server (the Go SDK's), each
// with a trust manifest signed by the catalog's key, and an entry whose
// manifest signed other bytes. Node A imports it: the two are published,
// the third refused; node B calls both.
func TestAICatalogImport(t *testing.T) {
	agentURL := jsA2AAgent(t)
	mcpURL := catalogMCPServer(t)
	_, key, _ := ed25519.GenerateKey(rand.Reader)

	// The catalog, its Server Card beside it.
	mux := http.NewServeMux()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "http://" + ln.Addr().String()
	serverCard := []byte(`{"$schema":"https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json","name":"io.example/greeter","description":"Greets.","version":"1.0.0","remotes":[{"type":"streamable-http","url":"` + mcpURL + `"}]}`)
	mux.HandleFunc("GET /server-card", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(serverCard) })
	cardURL := agentURL + ".well-known/agent-card.json"
	_, card := getJSONBody(t, cardURL)
	entries := []aicatalog.Entry{
		{Identifier: "urn:air:example.com:a2a:echo", DisplayName: "Echo", Type: aicatalog.TypeA2ACard, URL: cardURL},
		{Identifier: "urn:air:example.com:mcp:greeter", DisplayName: "Greeter", Type: aicatalog.TypeServerCard, URL: host + "/server-card"},
		{Identifier: "urn:air:example.com:a2a:tampered", DisplayName: "Tampered", Type: aicatalog.TypeA2ACard, URL: cardURL},
	}
	for i, art := range [][]byte{card, serverCard, append(slices.Clone(card), ' ')} {
		if err := aicatalog.SignEntry(key, &entries[i], art, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	mux.HandleFunc("GET /ai-catalog.json", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(aicatalog.Catalog{SpecVersion: "1.0", Entries: entries})
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	nw := testnet.New(t, 2, testnet.Options{})
	a, b := nw.Nodes[0], nw.Nodes[1]
	code, body := postJSON(t, "http://"+a.APIAddr()+aicatalog.PathImports, a.APIToken(), aicatalog.ImportRequest{URL: host + "/ai-catalog.json"})
	var res struct {
		Entries []struct {
			aicatalog.EntryResult
			Imported json.RawMessage `json:"imported"`
		} `json:"entries"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res.Entries) != 3 {
		t.Fatalf("import: %d %s", code, body)
	}
	var a2aThing struct{ ThingID string }
	var mcpImport struct{ Things []struct{ ThingID string } }
	for i, want := range []string{"imported verified", "imported verified", "refused unverified"} {
		if e := res.Entries[i]; e.Status+" "+e.Trust != want {
			t.Fatalf("entry %d: %s %s (%s), want %s", i, e.Status, e.Trust, e.Problem, want)
		}
	}
	if !strings.Contains(res.Entries[2].Problem, "is not the signed") {
		t.Errorf("tampered entry: %s", res.Entries[2].Problem)
	}
	if json.Unmarshal(res.Entries[0].Imported, &a2aThing) != nil || json.Unmarshal(res.Entries[1].Imported, &mcpImport) != nil || len(mcpImport.Things) != 1 {
		t.Fatalf("imported: %s", body)
	}

	nw.Link(1, 0)
	testnet.WaitFor(t, "B learns the imported Things", 20*time.Second, func() (bool, string) {
		return len(b.Directory().Lookup(a2aThing.ThingID)) > 0 && len(b.Directory().Lookup(mcpImport.Things[0].ThingID)) > 0, "not yet"
	})
	if got := invokeOutput(t, b, a2aThing.ThingID, "message", `"hi"`); got != `"echo: hi"` {
		t.Errorf("A2A agent from B: %s", got)
	}
	if got := invokeOutput(t, b, mcpImport.Things[0].ThingID, "greet", `{"name":"B"}`); got != `{"greeting":"Hello, B"}` {
		t.Errorf("MCP tool from B: %s", got)
	}

	// B's search finds the imported tool as its MCP endpoint's entry,
	// naming the tool B's MCP server offers for it.
	code, body = postJSON(t, "http://"+b.APIAddr()+aicatalog.PathSearch, "", map[string]any{"query": map[string]any{
		"text": "greet", "filter": map[string]any{"type": aicatalog.TypeServerCard}}, "federation": "none"})
	var found aicatalog.SearchResponse
	if code != http.StatusOK || json.Unmarshal(body, &found) != nil || len(found.Results) != 1 {
		t.Fatalf("search for the tool: %d %s", code, body)
	}
	r := found.Results[0]
	if r.Metadata[aicatalog.MetaThingID] != mcpImport.Things[0].ThingID || r.URL != "http://"+b.APIAddr()+"/.well-known/mcp/server-card.json" ||
		!slices.Equal(r.Capabilities, b.MCP().ToolNames(a.PeerID(), mcpImport.Things[0].ThingID)) || len(r.Capabilities) != 1 {
		t.Fatalf("search result: %s", body)
	}
}

// TestAICatalogGroupScoped: an agent restricted to a group is in the
// catalog and the search of a member's node only; an outsider's lists the
// owner's public agent and not the group's.
func TestAICatalogGroupScoped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := testnet.New(t, 2, testnet.Options{})
	owner, outsider := nw.Nodes[0], nw.Nodes[1]
	nw.Link(1, 0)
	info, err := owner.Groups().Create(ctx, "catalog-members", nil)
	if err != nil {
		t.Fatal(err)
	}
	secret, public := testnet.UniqueID(t), testnet.UniqueID(t)
	catalogAgent(t, owner, secret, "secret-"+secret[len(secret)-6:], info.ID)
	catalogAgent(t, owner, public, "public-"+public[len(public)-6:])
	testnet.WaitFor(t, "the outsider learns the public agent", waitLong, func() (bool, string) {
		return len(outsider.Directory().Lookup(public)) > 0, "not yet"
	})
	for _, c := range []struct {
		n    *node.Node
		want bool
	}{{owner, true}, {outsider, false}} {
		base := "http://" + c.n.APIAddr()
		_, cat := getJSONBody(t, base+aicatalog.PathCatalog)
		_, found := postJSON(t, base+aicatalog.PathSearch, "", map[string]any{"query": map[string]any{"text": "CatalogAgent"}, "federation": "none"})
		for what, doc := range map[string][]byte{"catalog": cat, "search": found} {
			if !strings.Contains(string(doc), `"lmos:thingId":"`+public+`"`) ||
				strings.Contains(string(doc), `"lmos:thingId":"`+secret+`"`) != c.want {
				t.Errorf("%s of %s (member %v): %s", what, c.n.PeerID(), c.want, doc)
			}
		}
	}

	// Pages: the owner's catalog a page of one agent, then the next
	// (Link rel="next"); its search a page of one, then the next
	// (pageToken).
	base := "http://" + owner.APIAddr()
	resp, err := http.Get(base + aicatalog.PathCatalog + "?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	var page1, page2 aicatalog.Catalog
	_ = json.NewDecoder(resp.Body).Decode(&page1)
	resp.Body.Close()
	next := strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Link"), "<"), `>; rel="next"`)
	if len(page1.Entries) != 3 || next != base+aicatalog.PathCatalog+"?limit=1&offset=1" {
		t.Fatalf("first page: %d entries, Link %q", len(page1.Entries), resp.Header.Get("Link"))
	}
	_, b := getJSONBody(t, next)
	if json.Unmarshal(b, &page2) != nil || len(page2.Entries) != 1 || page2.Entries[0].Identifier == page1.Entries[2].Identifier {
		t.Fatalf("second page: %s", b)
	}
	var s1, s2 aicatalog.SearchResponse
	_, b = postJSON(t, base+aicatalog.PathSearch, "", map[string]any{"query": map[string]any{"text": "CatalogAgent"}, "pageSize": 1})
	if json.Unmarshal(b, &s1) != nil || len(s1.Results) != 1 || s1.PageToken == "" {
		t.Fatalf("search page 1: %s", b)
	}
	_, b = postJSON(t, base+aicatalog.PathSearch, "", map[string]any{"query": map[string]any{"text": "CatalogAgent"}, "pageSize": 1, "pageToken": s1.PageToken})
	if json.Unmarshal(b, &s2) != nil || len(s2.Results) != 1 || s2.PageToken != "" || s2.Results[0].Identifier == s1.Results[0].Identifier {
		t.Fatalf("search page 2: %s", b)
	}
}
