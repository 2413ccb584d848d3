package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/internal/testnet"
)

// TestImportAgentsJSONCommand: `lmosnode import agents-json` publishes
// the Link Up example's flow as a Tool, `invoke` runs it against the API
// served on 127.0.0.1; a URL without a document fails naming the status.
func TestImportAgentsJSONCommand(t *testing.T) {
	dir := filepath.Join("..", "..", "node", "agentsjson", "testdata")
	doc, err := os.ReadFile(filepath.Join(dir, "linkup.agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(filepath.Join(dir, "linkup.openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /agents.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(doc) })
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.ReplaceAll(api, []byte("SERVER"), []byte(srv.URL)))
	})
	mux.HandleFunc("POST /v1/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"answer":"`+r.URL.Query().Get("q")+`"}`)
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()

	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	out := mustRun(t, "--home", n.Config().Home, "import", "agents-json", srv.URL+"/agents.json")
	if !strings.HasPrefix(out, "imported flow linkup_search_flow as urn:uuid:") || !strings.Contains(out, "POST "+srv.URL+"/v1/search") {
		t.Fatalf("import agents-json: %q", out)
	}
	tool := strings.Fields(out)[4]
	got := mustRun(t, "--home", n.Config().Home, "invoke", tool, "run", `{"parameters":{"q":"nobel","depth":"deep"}}`)
	if strings.TrimSpace(got) != `{"answer":"nobel"}` {
		t.Fatalf("invoke: %q", got)
	}
	if _, errOut, code := lmosnode(t, "", "--home", n.Config().Home, "import", "agents-json", srv.URL+"/none.json"); code == 0 || !strings.Contains(errOut, "HTTP 404") {
		t.Fatalf("import of a missing document: exit %d, %q", code, errOut)
	}
}
