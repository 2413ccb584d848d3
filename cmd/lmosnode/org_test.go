package main

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/did"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestOrgCommands: org doc prints a document that lists this node's key and
// each --node and says where to host it; org set binds the node (the
// organization setting) and refuses what is not a did:web / did:wba DID.
func TestOrgCommands(t *testing.T) {
	home := t.TempDir()
	mustRun(t, "init", "--home", home)
	self := strings.TrimSpace(mustRun(t, "id", "--home", home, "--json"))
	other, _, _ := ed25519.GenerateKey(nil)
	out, errOut, code := lmosnode(t, "", "org", "doc", "--home", home, "did:web:example.com%3A8443", "--node", lmosproto.DIDKey(other))
	if code != 0 || !strings.Contains(errOut, "https://example.com:8443/.well-known/did.json") {
		t.Fatalf("org doc: exit %d\n%s\n%s", code, out, errOut)
	}
	doc, err := did.ParseDocument("did:web:example.com%3A8443", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.HasAssertionKey(other); !ok || len(doc.AssertionMethod) != 2 {
		t.Errorf("org doc lists %v", doc.AssertionMethod)
	}
	if m := doc.VerificationMethods[0]; !strings.Contains(self, strings.TrimPrefix(lmosproto.DIDKey(m.PublicKey), "did:key:")) {
		t.Errorf("the first key %s is not this node's (%s)", lmosproto.DIDKey(m.PublicKey), self)
	}

	if _, errOut, code := lmosnode(t, "", "org", "set", "--home", home, "did:web:127.0.0.1"); code == 0 {
		t.Errorf("org set with an IP address: exit 0 %s", errOut)
	}
	mustRun(t, "org", "set", "--home", home, "did:wba:example.com")
	if got := strings.TrimSpace(mustRun(t, "config", "get", "--home", home, "organization")); got != `"did:wba:example.com"` {
		t.Errorf("config get organization: %q", got)
	}
	if out := mustRun(t, "org", "show", "--home", home); !strings.Contains(out, "https://example.com/.well-known/did.json") || !strings.Contains(out, "example.com") {
		t.Errorf("org show: %s", out)
	}
}
