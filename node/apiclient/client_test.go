package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	"github.com/lmosnode/lmosnode/node/tdd"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// seen is a request as a fake node received it.
type seen struct {
	method, path, contentType, accept, body string
}

// fakeNode serves answer for every request and records the requests.
type fakeNode struct {
	url  string
	mu   sync.Mutex
	reqs []seen
}

func newFake(t *testing.T, answer http.HandlerFunc) *fakeNode {
	t.Helper()
	f := &fakeNode{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), r.Header.Get("Accept"), string(b)})
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeNode) last() seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func answerProblem(status int, detail string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", lmosproto.ContentTypeProblemJSON)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(lmosproto.Problem{Title: http.StatusText(status), Status: status, Detail: detail})
	}
}

// A body goes as JSON: a json.RawMessage byte for byte, anything else
// encoded; every request asks for JSON or a problem.
func TestRequestBodies(t *testing.T) {
	f := newFake(t, answerJSON(http.StatusAccepted, ""))
	c := apiclient.New(f.url+"/", nil) // a trailing slash is dropped
	ctx := context.Background()

	if err := c.Post(ctx, "lab", json.RawMessage(`{ "alert" :  "disk" }`)); err != nil {
		t.Fatal(err)
	}
	got := f.last()
	want := seen{http.MethodPost, "/api/v1/groups/lab/messages", "application/json",
		"application/json, application/ld+json, application/problem+json", `{ "alert" :  "disk" }`}
	if got != want {
		t.Errorf("Post sent %+v, want %+v", got, want)
	}

	f2 := newFake(t, answerJSON(http.StatusOK, `{"entries":[]}`))
	if _, err := apiclient.New(f2.url, nil).SetTrust(ctx, "…zRfVBq6e", "prefer"); err != nil {
		t.Fatal(err)
	}
	if got := f2.last(); got.method != http.MethodPut || got.path != "/api/v1/trust/%E2%80%A6zRfVBq6e" || got.body != `{"level":"prefer"}` || got.contentType != "application/json" {
		t.Errorf("SetTrust sent %+v", got)
	}
	if _, err := apiclient.New(f2.url, nil).Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f2.last(); got.method != http.MethodGet || got.body != "" || got.contentType != "" {
		t.Errorf("Trust sent %+v", got)
	}
}

// A failure is the problem the answer carries: alone for most methods,
// after method and URL for the node-info and trust methods.
func TestProblems(t *testing.T) {
	ctx := context.Background()
	conflict := newFake(t, answerProblem(http.StatusConflict, "the last admin cannot leave"))
	_, err := apiclient.New(conflict.url, nil).LeaveGroup(ctx, "lab")
	var p *lmosproto.Problem
	if !errors.As(err, &p) || p.Status != http.StatusConflict || err.Error() != "409 Conflict: the last admin cannot leave" {
		t.Errorf("LeaveGroup: %v, want the 409 problem alone", err)
	}
	_, err = apiclient.New(conflict.url, nil).RemoveTrust(ctx, "x")
	if want := "DELETE " + conflict.url + "/api/v1/trust/x: 409 Conflict: the last admin cannot leave"; !errors.As(err, &p) || err.Error() != want {
		t.Errorf("RemoveTrust: %q, want %q", err, want)
	}

	// Not a problem: the status, and a text body's first line.
	plain := newFake(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	if err := apiclient.New(plain.url, nil).RemoveMCPImport(ctx, "x"); !errors.As(err, &p) || p.Status != http.StatusNotFound || p.Detail != "404 page not found" {
		t.Errorf("RemoveMCPImport of something else: %#v", err)
	}
	// A problem that does not decode: the request is named.
	broken := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", lmosproto.ContentTypeProblemJSON)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "{")
	})
	if _, err := apiclient.New(broken.url, nil).Peers(ctx); err == nil || !strings.HasPrefix(err.Error(), "GET /api/v1/peers: 400 Bad Request, undecodable problem body") {
		t.Errorf("Peers with a broken problem: %v", err)
	}
}

// A node that does not answer: the error names the URL and is the
// refusal, which the CLI explains.
func TestRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	_, err := apiclient.New(srv.URL, nil).Node(context.Background())
	want := "GET " + srv.URL + "/api/v1/node: Get \"" + srv.URL + "/api/v1/node\": "
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Node of a closed server: %v, want a refusal after %q", err, want)
	}
	if _, err := apiclient.New(srv.URL, nil).Own(context.Background()); !errors.Is(err, syscall.ECONNREFUSED) || !strings.HasPrefix(err.Error(), `Get "`) {
		t.Errorf("Own of a closed server: %v", err)
	}
}

// Join tells a pending join (202) from a done one (200) by the status.
func TestJoinStatus(t *testing.T) {
	ctx := context.Background()
	pending := newFake(t, answerJSON(http.StatusAccepted, `{"group":"bafkreigroup","pending":true}`))
	res, err := apiclient.New(pending.url, nil).Join(ctx, "lmosgroup:x")
	if err != nil || !res.Pending || res.Group != "bafkreigroup" || res.Info != nil {
		t.Errorf("pending Join: %+v, %v", res, err)
	}
	if got := pending.last(); got.path != "/api/v1/groups/join" || got.body != `{"token":"lmosgroup:x"}` {
		t.Errorf("Join sent %+v", got)
	}
	joined := newFake(t, answerJSON(http.StatusOK, `{"id":"bafkreigroup","name":"lab"}`))
	res, err = apiclient.New(joined.url, nil).Join(ctx, "lmosgroup:x")
	if err != nil || res.Pending || res.Group != "bafkreigroup" || res.Info == nil || res.Info.Name != "lab" {
		t.Errorf("Join: %+v, %v", res, err)
	}
}

// An answer without a body (204) is a success with nothing to decode.
func TestNoContent(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	c := apiclient.New(f.url, nil)
	if err := c.RemoveThing(context.Background(), "urn:a b"); err != nil {
		t.Fatal(err)
	}
	if got := f.last(); got.method != http.MethodDelete || got.path != "/api/v1/things/urn:a%20b" {
		t.Errorf("RemoveThing sent %+v", got)
	}
	if err := c.RemoveMCPImport(context.Background(), "imp1"); err != nil {
		t.Fatal(err)
	}
}

// A success is decoded only from JSON, and only as much as the bound of
// the route.
func TestAnswerChecks(t *testing.T) {
	ctx := context.Background()
	html := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html></html>")
	})
	if _, err := apiclient.New(html.url, nil).Node(ctx); err == nil || !strings.Contains(err.Error(), `content type "text/html", want application/json`) {
		t.Errorf("Node answered with HTML: %v", err)
	}
	// A TD listing may come as JSON-LD.
	ld := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", tdd.ContentTypeLDJSON)
		_, _ = io.WriteString(w, "[]")
	})
	if res, err := apiclient.New(ld.url, nil).Find(ctx, apiclient.FindQuery{}); err != nil || len(res.Things) != 0 {
		t.Errorf("Find of an empty JSON-LD listing: %+v, %v", res, err)
	}
	big := newFake(t, answerJSON(http.StatusOK, `["`+strings.Repeat("x", 9<<20)+`"]`))
	if _, err := apiclient.New(big.url, nil).Groups(ctx); err == nil || !strings.Contains(err.Error(), "GET /api/v1/groups: decode application/json body") {
		t.Errorf("Groups over the bound: %v", err)
	}
}

// Find sends the query, reads the page's headers and verifies each TD:
// one without a proof has no publisher.
func TestFind(t *testing.T) {
	td := `{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:a","title":"A",` +
		`"securityDefinitions":{"nosec_sc":{"scheme":"nosec"}},"security":"nosec_sc"}`
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", `</things?offset=1>; rel="next"`)
		w.Header().Set(tdd.HeaderOnline, "true")
		answerJSON(http.StatusOK, "["+td+"]")(w, nil)
	})
	res, err := apiclient.New(f.url, nil).Find(context.Background(), apiclient.FindQuery{Capability: "geocode@^1", Online: true, Limit: 1})
	if err != nil || len(res.Things) != 1 || !res.More {
		t.Fatalf("Find: %+v, %v", res, err)
	}
	if got := res.Things[0]; got.TD.ID != "urn:a" || !got.Online || got.Publisher != "" || got.VerifyErr == nil || string(got.Raw) != td {
		t.Errorf("found %+v", got)
	}
	if got := f.last().path; got != "/things?capability=geocode%40%5E1&limit=1&online=true" {
		t.Errorf("Find asked %s", got)
	}
}

// FindResult.Next is the cursor of the rel="next" link (not of another
// link), and FindQuery.Cursor sends it back.
func TestFindCursor(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Add("Link", `<http://127.0.0.1/things?cursor=wrong>; rel="canonical"; etag="1"`)
		w.Header().Add("Link", `<http://127.0.0.1/things?cursor=AQE-x_&limit=2>; rel="next"`)
		answerJSON(http.StatusOK, "[]")(w, nil)
	})
	c := apiclient.New(f.url, nil)
	res, err := c.Find(context.Background(), apiclient.FindQuery{Cursor: "AQA", Limit: 2})
	if err != nil || res.Next != "AQE-x_" || !res.More {
		t.Fatalf("Find: %+v, %v", res, err)
	}
	if got := f.last().path; got != "/things?cursor=AQA&limit=2" {
		t.Errorf("Find asked %s", got)
	}
}

// Subscribe reads the group's posts from the event stream, skips other
// events, and ends with io.EOF when the node ends the stream.
func TestSubscribe(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/groups/lab/messages" {
			answerProblem(http.StatusNotFound, "no group")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "retry: 2000\n\nevent: other\ndata: x\n\n: heartbeat\n\nevent: post\ndata: {\"body\":\"hi\"}\n\n")
	})
	c := apiclient.New(f.url, nil)
	sub, err := c.Subscribe(context.Background(), "lab")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := f.last().accept; got != "text/event-stream" {
		t.Errorf("Subscribe asked for %q", got)
	}
	if p, err := sub.Next(); err != nil || string(p.Body) != `"hi"` {
		t.Errorf("Next: %+v, %v", p, err)
	}
	if p, err := sub.Next(); err != io.EOF {
		t.Errorf("Next at the end: %+v, %v", p, err)
	}
	var p *lmosproto.Problem
	if _, err := c.Subscribe(context.Background(), "nope"); !errors.As(err, &p) || p.Status != http.StatusNotFound {
		t.Errorf("Subscribe to an unknown group: %v", err)
	}
}

// The MCP import methods send the source and read the import.
func TestMCPImports(t *testing.T) {
	f := newFake(t, answerJSON(http.StatusCreated, `{"id":"imp1","url":"http://127.0.0.1:8931/mcp","state":"connected"}`))
	info, err := apiclient.New(f.url, nil).ImportMCP(context.Background(), mcpbridge.Source{URL: "http://127.0.0.1:8931/mcp"})
	if err != nil || info.ID != "imp1" || info.URL != "http://127.0.0.1:8931/mcp" {
		t.Errorf("ImportMCP: %+v, %v", info, err)
	}
	if got := f.last(); got.path != mcpbridge.ImportsPath || got.body != `{"url":"http://127.0.0.1:8931/mcp"}` {
		t.Errorf("ImportMCP sent %+v", got)
	}
}

// ExampleClient asks a node for its info. The base URL is the one the
// node's api file records; a node with an API token wants
// apiclient.New(url, httpapi.BearerClient(token)).
func ExampleClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"peerID":"12D3KooWExample","didKey":"did:key:z6MkExample","version":"1.0.0"}`)
	}))
	defer srv.Close()

	c := apiclient.New(srv.URL, nil)
	info, err := c.Node(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(info.PeerID, info.Version)
	// Output: 12D3KooWExample 1.0.0
}
