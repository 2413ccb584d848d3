package agentsjson

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// rootlyAPI serves the spec's Rootly example agents.json (its source
// pointing at testdata/rootly.openapi.json, servers relative to it) and
// the two operations of its flow; it records the requests it gets.
func rootlyAPI(t *testing.T) (srv *httptest.Server, got func() []string) {
	t.Helper()
	var mu sync.Mutex
	var reqs []string
	mux := http.NewServeMux()
	for _, f := range []string{"rootly.agents.json", "rootly.openapi.json"} {
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		mux.HandleFunc("GET /"+strings.TrimPrefix(f, "rootly."), func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		})
	}
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, r.Method+" "+r.URL.RequestURI())
	}
	mux.HandleFunc("GET /v1/incidents", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[{"id":"inc 7"},{"id":"8"}]}`)
	})
	mux.HandleFunc("GET /v1/incidents/{id}", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "application/vnd.api+json")
		_, _ = io.WriteString(w, `{"data":{"id":"`+r.PathValue("id")+`","title":"Database down"}}`)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reqs...)
	}
}

// TestRunChain: a fresh client (as after a restart) reads the document
// and the OpenAPI source, and runs a flow of two operations: the flow's
// parameter goes to the first one's query, an id from its answer to the
// second one's path (a path-item parameter behind a $ref); the output is
// the second answer.
func TestRunChain(t *testing.T) {
	srv, got := rootlyAPI(t)
	c, err := NewClient(ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/agents.json#retrieve_top_incident_details"
	p, err := c.plan(context.Background(), url, srv.URL+"/agents.json", "retrieve_top_incident_details")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := lmosproto.ParseValue([]byte(`{"parameters":{"search_query":"db down"}}`))
	out, err := c.run(context.Background(), p, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != `{"data":{"id":"inc 7","title":"Database down"}}` {
		t.Fatalf("output %s", out)
	}
	want := []string{"GET /v1/incidents?filter%5Bsearch%5D=db+down", "GET /v1/incidents/inc%207"}
	if r := got(); strings.Join(r, "|") != strings.Join(want, "|") {
		t.Fatalf("requests %q, want %q", r, want)
	}
}

// TestRunFailure: an operation that answers 500 fails the flow with 502
// naming the operation and the status.
func TestRunFailure(t *testing.T) {
	srv, _ := rootlyAPI(t)
	c, _ := NewClient(ClientConfig{})
	p, err := c.plan(context.Background(), srv.URL+"/agents.json#x", srv.URL+"/agents.json", "retrieve_top_incident_details")
	if err != nil {
		t.Fatal(err)
	}
	p.steps[0].url = srv.URL + "/nowhere"
	_, err = c.run(context.Background(), p, lmosproto.Value{})
	if pr, ok := err.(*lmosproto.Problem); !ok || pr.Status != http.StatusBadGateway || !strings.Contains(pr.Detail, "HTTP 404") {
		t.Fatalf("error %v", err)
	}
}

// TestFetchBounds: a redirect to another host is refused, one on the
// same host followed; a document over MaxDocument is refused.
func TestFetchBounds(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") }))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/doc", http.StatusFound) })
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/doc", http.StatusFound) })
	mux.HandleFunc("/doc", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, strings.Repeat(" ", 2048)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, _ := NewClient(ClientConfig{MaxDocument: 1024})
	ctx := context.Background()
	if _, err := c.fetch(ctx, srv.URL+"/away"); err == nil || !strings.Contains(err.Error(), "another host") {
		t.Errorf("redirect to another host: %v", err)
	}
	if b, err := c.fetch(ctx, srv.URL+"/here"); err != nil || string(b) != "{}" {
		t.Errorf("redirect on the host: %q, %v", b, err)
	}
	if _, err := c.fetch(ctx, srv.URL+"/big"); err == nil || !strings.Contains(err.Error(), "longer than 1024") {
		t.Errorf("oversize document: %v", err)
	}
}
