package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/aicatalog"
)

// TestImportAICatalog: `lmosnode import ai-catalog` imports the MCP
// server of a catalog entry whose trust manifest verifies, and refuses an
// entry whose manifest signed other bytes unless --allow-unverified.
func TestImportAICatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a node")
	}
	bin := buildBinary(t)
	_, mcpURL, _ := goMCPServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "http://" + ln.Addr().String()
	card := []byte(`{"$schema":"https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json","name":"io.example/greeter","description":"Greets.","version":"1.0.0","remotes":[{"type":"streamable-http","url":"` + mcpURL + `"}]}`)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	good := aicatalog.Entry{Identifier: "urn:air:example.com:mcp:greeter", DisplayName: "Greeter", Type: aicatalog.TypeServerCard, URL: host + "/card"}
	bad := aicatalog.Entry{Identifier: "urn:air:example.com:mcp:other", DisplayName: "Other", Type: aicatalog.TypeServerCard, URL: host + "/card"}
	if aicatalog.SignEntry(key, &good, card, time.Now()) != nil || aicatalog.SignEntry(key, &bad, []byte("{}"), time.Now()) != nil {
		t.Fatal("signing")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /card", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(card) })
	mux.HandleFunc("GET /catalog", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(aicatalog.Catalog{SpecVersion: "1.0", Entries: []aicatalog.Entry{good, bad}})
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	n := testnet.New(t, 1, testnet.Options{}).Nodes[0]
	out := runOK(t, bin, "import", "ai-catalog", host+"/catalog", "--home", n.Config().Home)
	if !strings.Contains(out, "imported urn:air:example.com:mcp:greeter (application/mcp-server-card+json, trust verified)") ||
		!strings.Contains(out, "refused urn:air:example.com:mcp:other") || !strings.Contains(out, "is not the signed") {
		t.Fatalf("import printed %q", out)
	}
	if infos := n.MCPImports().List(); len(infos) != 1 || infos[0].URL != mcpURL {
		t.Fatalf("MCP imports: %+v", infos)
	}
	out = runOK(t, bin, "import", "ai-catalog", "--allow-unverified", "--json", host+"/catalog", "--home", n.Config().Home)
	var res aicatalog.ImportResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Entries) != 2 || res.Entries[1].Status != aicatalog.StatusImported || res.Entries[1].Trust != aicatalog.TrustUnverified {
		t.Fatalf("--allow-unverified --json printed %q (%v)", out, err)
	}
}
