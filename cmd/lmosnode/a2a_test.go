package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestA2ACommands: node B imports, with `lmosnode a2a import`, an agent
// that node A serves over A2A; `a2a ls` lists it on both nodes, and B's
// `invoke` calls it (B → A2A → A).
func TestA2ACommands(t *testing.T) {
	net := testnet.New(t, 2, testnet.Options{})
	a, b := net.Nodes[0], net.Nodes[1]
	id := testnet.UniqueID(t)
	td := testnet.TD(t, id, "Shouter", "shout")
	td.Actions = map[string]*lmosproto.ActionAffordance{"shout": {
		Input: json.RawMessage(`{"type":"string"}`),
		Forms: []lmosproto.Form{{Href: "https://agent.invalid/shout"}},
	}}
	shout := interact.NewThing().OnAction("shout", func(_ context.Context, in lmosproto.Value, _ func(lmosproto.Value)) (lmosproto.Value, error) {
		var s string
		if err := in.Decode(&s); err != nil {
			return lmosproto.Value{}, err
		}
		return lmosproto.StringValue(strings.ToUpper(s) + "!"), nil
	})
	if _, err := a.Register(td, shout); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "--home", a.Config().Home, "a2a", "ls"); !strings.Contains(out, "Shouter") || !strings.Contains(out, id) {
		t.Fatalf("a2a ls on A:\n%s", out)
	}
	card := "http://" + a.APIAddr() + a2abridge.AgentPath(a.PeerID(), id) + ".well-known/agent-card.json"
	// A's card is signed by A, its jku on plain http: B trusts it only
	// with A's key pinned.
	if _, errOut, code := lmosnode(t, "", "--home", b.Config().Home, "a2a", "import", card); code == 0 || !strings.Contains(errOut, "--allow-unsigned") {
		t.Fatalf("import without a key: exit %d, %q", code, errOut)
	}
	resp, err := http.Get("http://" + a.APIAddr() + "/a2a/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	keyFile := filepath.Join(t.TempDir(), "a-jwks.json")
	if err := os.WriteFile(keyFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "--home", b.Config().Home, "a2a", "import", "--key", keyFile, card)
	if !strings.HasPrefix(out, "imported urn:uuid:") || !strings.Contains(out, a2abridge.AgentPath(a.PeerID(), id)) ||
		!strings.Contains(out, "card signature verified (kid did:key:") {
		t.Fatalf("a2a import: %q", out)
	}
	imported := strings.Fields(out)[1]
	if out := mustRun(t, "--home", b.Config().Home, "a2a", "ls"); !strings.Contains(out, imported) {
		t.Fatalf("a2a ls on B:\n%s", out)
	}
	if out := mustRun(t, "--home", b.Config().Home, "invoke", imported, a2abridge.ActionMessage, `"hey"`); strings.TrimSpace(out) != `"HEY!"` {
		t.Fatalf("invoke: %q", out)
	}
	if _, errOut, code := lmosnode(t, "", "--home", b.Config().Home, "a2a", "import", "http://"+a.APIAddr()+"/no/card"); code != exitUnavailable || !strings.Contains(errOut, "HTTP 404") {
		t.Fatalf("import of a missing card: exit %d, %q", code, errOut)
	}
}
