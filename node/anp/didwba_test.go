package anp

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestNewIdentity: a path DID gets the key's e1_ segment, its document
// resolves under node/did's rules (id, e1_ binding proof, the key in
// authentication), a bare-domain DID lives at /.well-known/did.json, and
// an e1_ segment of another key is refused.
func TestNewIdentity(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	id, err := NewIdentity("did:wba:agents.example%3A8443:node:alpha", key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := "did:wba:agents.example%3A8443:node:alpha:" + Fingerprint(pub); id.DID != want || id.KeyID != want+"#key-1" {
		t.Fatalf("DID %s, key %s", id.DID, id.KeyID)
	}
	if p := id.DocumentPath(); p != "/node/alpha/"+Fingerprint(pub)+"/did.json" {
		t.Fatalf("path %s", p)
	}
	doc, err := did.ParseDocument(id.DID, id.Document())
	if err != nil {
		t.Fatalf("node/did refuses the document: %v\n%s", err, id.Document())
	}
	if m, ok := doc.HasAuthenticationKey(pub); !ok || m != id.KeyID {
		t.Fatalf("authentication %v", doc.Authentication)
	}
	if _, err := lmosproto.VerifyDocumentKey(id.Document(), func(string) (ed25519.PublicKey, error) { return pub, nil }); err != nil {
		t.Fatalf("proof: %v", err)
	}
	if again, err := NewIdentity(id.DID, key, time.Now()); err != nil || again.DID != id.DID {
		t.Fatalf("the DID with its e1_ segment: %v %v", again, err)
	}
	bare, err := NewIdentity("did:wba:agents.example", key, time.Now())
	if err != nil || bare.DID != "did:wba:agents.example" || bare.DocumentPath() != "/.well-known/did.json" {
		t.Fatalf("bare domain: %+v %v", bare, err)
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := NewIdentity(id.DID, other, time.Now()); err == nil {
		t.Fatal("another key's e1_ segment was accepted")
	}
	for _, bad := range []string{"did:web:agents.example", "did:wba:127.0.0.1", "did:wba:localhost"} {
		if _, err := NewIdentity(bad, key, time.Now()); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
