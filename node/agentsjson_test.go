package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/agentsjson"
	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// agentsJSONDir holds the independent tools the agents.json tests run:
// ajv, swagger-parser and a client written from the documents.
var agentsJSONDir = filepath.Join("..", "scripts", "interop", "agentsjson")

// agentsJSONSchema is the official schema of agents.json, relative to
// agentsJSONDir.
const agentsJSONSchema = "agentsJson.schema.json"

// greeter registers on n an lmos:Agent with an action "greet" (input
// {"name": string, "polite": boolean}) and a readable property "mood".
func greeter(t testing.TB, n *node.Node, id string, groups ...string) {
	t.Helper()
	td := testnet.TD(t, id, "Greeter Agent", "greeting")
	td.Description = "Greets people."
	td.Groups = groups
	td.Actions = map[string]*lmosproto.ActionAffordance{"greet": {
		Title:       "Greet",
		Description: "Greets someone by name.",
		Input:       json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Who to greet"},"polite":{"type":"boolean"}},"required":["name"]}`),
		Output:      json.RawMessage(`{"type":"string"}`),
		Forms:       []lmosproto.Form{{Href: "https://agent.invalid/greet"}},
	}}
	ro := true
	td.Properties = map[string]*lmosproto.PropertyAffordance{"mood": {
		ReadOnly: &ro, Forms: []lmosproto.Form{{Href: "https://agent.invalid/mood"}},
		Extra: map[string]json.RawMessage{"type": json.RawMessage(`"string"`)},
	}}
	thing := interact.NewThing().OnAction("greet", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var v struct {
			Name   string `json:"name"`
			Polite bool   `json:"polite"`
		}
		if err := in.Decode(&v); err != nil {
			return lmosproto.Value{}, err
		}
		if v.Polite {
			return lmosproto.StringValue("Good day, " + v.Name), nil
		}
		return lmosproto.StringValue("Hi " + v.Name), nil
	}).OnProperty("mood", func(context.Context) (lmosproto.Value, error) { return lmosproto.StringValue("cheerful"), nil }, nil)
	if _, err := n.Register(td, thing); err != nil {
		t.Fatal(err)
	}
}

// agentsJSNode runs script of scripts/interop/agentsjson with args and
// returns its standard output; the test fails if it fails.
func agentsJSNode(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	testnet.NPM(t, agentsJSONDir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = agentsJSONDir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s%s", script, err, out.Bytes(), errb.Bytes())
	}
	return out.Bytes()
}

// TestAgentsJSONExport: node B's agents.json describes node A's agent;
// ajv validates it against the official schema and swagger-parser its
// OpenAPI sources; a client written from the documents calls the agent
// through B, a flow of an action and a flow of a property read. A
// group-scoped agent of a group B is not in is not listed.
func TestAgentsJSONExport(t *testing.T) {
	owner, consumer, id := a2aPair(t, greeter)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	group, err := owner.Groups().Create(ctx, "agentsjson-members", nil)
	if err != nil {
		t.Fatal(err)
	}
	hidden := testnet.UniqueID(t) + "-hidden"
	greeter(t, owner, hidden, group.ID)
	if _, b := getJSONBody(t, "http://"+owner.APIAddr()+agentsjson.PathWellKnown); !strings.Contains(string(b), hidden) {
		t.Fatalf("the owner's agents.json lacks its group-scoped agent: %s", b)
	}
	docURL := "http://" + consumer.APIAddr() + agentsjson.PathWellKnown

	code, b := getJSONBody(t, docURL)
	var doc agentsjson.Doc
	if code != http.StatusOK || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("GET %s: %d %s", docURL, code, b)
	}
	src := agentsjson.SourceID(owner.PeerID(), id, "Greeter Agent")
	flows := map[string]agentsjson.Flow{}
	for _, f := range doc.Flows {
		flows[f.ID] = f
	}
	greet, ok := flows[src+"_invoke_greet"]
	if !ok || len(greet.Fields.Parameters) != 2 || len(greet.Links) != 2 {
		t.Fatalf("no flow %s_invoke_greet with two parameters and links in %s", src, b)
	}
	if _, ok := flows[src+"_read_mood"]; !ok {
		t.Fatalf("no flow %s_read_mood in %s", src, b)
	}
	if strings.Contains(string(b), hidden) {
		t.Fatalf("the group-scoped agent %s is listed on a node outside its group: %s", hidden, b)
	}

	got := agentsJSNode(t, "validate.mjs", agentsJSONSchema, docURL)
	var counts struct{ Sources, Flows, Operations int }
	if json.Unmarshal(got, &counts) != nil || counts.Sources != len(doc.Sources) || counts.Flows != len(doc.Flows) || counts.Operations != counts.Flows {
		t.Fatalf("validate.mjs: %s", got)
	}

	var call struct {
		Status int
		Body   any
	}
	got = agentsJSNode(t, "client.mjs", docURL, greet.ID, `{"name":"Ada","polite":true}`)
	if json.Unmarshal(got, &call) != nil || call.Status != http.StatusOK || call.Body != "Good day, Ada" {
		t.Fatalf("client.mjs %s: %s", greet.ID, got)
	}
	got = agentsJSNode(t, "client.mjs", docURL, src+"_read_mood", `{}`)
	if json.Unmarshal(got, &call) != nil || call.Status != http.StatusOK || call.Body != "cheerful" {
		t.Fatalf("client.mjs read_mood: %s", got)
	}

	// Rendered once per directory revision: the ETag answers 304.
	req, _ := http.NewRequest(http.MethodGet, docURL, nil)
	resp, err := http.DefaultClient.Do(req)

	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("GET with If-None-Match %q: %v %v", req.Header.Get("If-None-Match"), resp.StatusCode, err)
	}
	resp.Body.Close()
}

// linkupAPI serves on 127.0.0.1 the spec's Link Up example agents.json,
// its source pointing at an OpenAPI document (YAML) of its own, and the
// API: POST /v1/search records the query it gets and answers JSON.
func linkupAPI(t *testing.T) (srv *httptest.Server, got func() []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("agentsjson", "testdata", "linkup.agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(filepath.Join("agentsjson", "testdata", "linkup.openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var queries []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agents.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(bytes.ReplaceAll(api, []byte("SERVER"), []byte("http://"+srv.Listener.Addr().String())))
	})
	mux.HandleFunc("POST /v1/search", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"answer":"five","sources":[{"name":"Wikipedia"}]}`)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries...)
	}
}

// TestAgentsJSONImport: node A imports the Link Up example (served with
// a real HTTP backend on 127.0.0.1) as an lmos:Tool; node B calls the
// Tool through its HTTP binding; the backend gets the flow's parameters
// as the OpenAPI operation's query.
func TestAgentsJSONImport(t *testing.T) {
	srv, queries := linkupAPI(t)
	net := testnet.New(t, 2, testnet.Options{})
	owner, consumer := net.Nodes[0], net.Nodes[1]

	// The import acts as the node: it needs the API token.
	base := "http://" + owner.APIAddr()
	var p *lmosproto.Problem
	if _, err := apiclient.New(base, nil).ImportAgentsJSON(context.Background(), srv.URL+"/agents.json"); !errors.As(err, &p) || p.Status != http.StatusUnauthorized {
		t.Fatalf("import without the token: %v", err)
	}
	imp, err := apiclient.New(base, httpapi.BearerClient(owner.APIToken())).ImportAgentsJSON(context.Background(), srv.URL+"/agents.json")
	if err != nil || len(imp.Tools) != 1 || imp.Tools[0].Flow != "linkup_search_flow" || imp.Tools[0].Operations[0] != "POST "+srv.URL+"/v1/search" {
		t.Fatalf("import: %+v, %v", imp, err)
	}
	tool := imp.Tools[0].ThingID
	td, ok := owner.Things().TD(tool)
	if !ok || !td.IsTool() || td.Title != "Search the Web" {
		t.Fatalf("imported TD %+v", td)
	}

	net.Link(1, 0)
	testnet.WaitFor(t, "B learns the imported tool", 10*time.Second, func() (bool, string) {
		return len(consumer.Directory().Lookup(tool)) > 0, "not yet"
	})
	in := `{"parameters":{"q":"women nobel physics","depth":"standard"}}`
	resp, err := http.Post("http://"+consumer.APIAddr()+"/things/"+tool+"/actions/"+agentsjson.ActionRun, "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != `{"answer":"five","sources":[{"name":"Wikipedia"}]}` {
		t.Fatalf("call through B: %d %s", resp.StatusCode, b)
	}
	if q := queries(); len(q) != 1 || q[0] != "depth=standard&q=women+nobel+physics" {
		t.Fatalf("the backend got %q", q)
	}
}

// TestAgentsJSONImportSurvivesRestart: the Tool an import published
// still calls the API after its node restarts (the backend reads the
// document again at its first call).
func TestAgentsJSONImportSurvivesRestart(t *testing.T) {
	srv, queries := linkupAPI(t)
	cfg := testnet.Config(t)
	first, err := node.New(cfg, node.WithLogger(testnet.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	imp, err := apiclient.New("http://"+first.APIAddr(), httpapi.BearerClient(first.APIToken())).ImportAgentsJSON(ctx, srv.URL+"/agents.json")
	if err != nil || len(imp.Tools) != 1 {
		t.Fatalf("import: %+v, %v", imp, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	again := restartNode(t, cfg, nil)
	in := `{"parameters":{"q":"after restart","depth":"deep"}}`
	resp, err := http.Post("http://"+again.APIAddr()+"/things/"+imp.Tools[0].ThingID+"/actions/"+agentsjson.ActionRun, "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"answer":"five"`) {
		t.Fatalf("call after the restart: %d %s", resp.StatusCode, b)
	}
	if q := queries(); len(q) != 1 || q[0] != "depth=deep&q=after+restart" {
		t.Fatalf("the backend got %q", q)
	}
}
