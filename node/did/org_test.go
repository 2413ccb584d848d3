package did_test

import (
	"crypto/ed25519"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/did/didtest"
	"github.com/lmosnode/lmosnode/proto"
)

// TestMembers: a claim is pending until its document is in, then verified
// for a listed key and unverified (with the reason) for another; Verified
// answers from the latest claim noted; Generation moves when a result is
// stored.
func TestMembers(t *testing.T) {
	srv := didtest.NewServer(t, "org.example")
	listed, _ := newKey(t)
	other, _ := newKey(t)
	org := srv.DID("web")
	body, _ := did.NewDocument(org, []ed25519.PublicKey{listed})
	// The document is held back until the first look is checked: that
	// look must find the claim pending, whatever the scheduler does.
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	defer release()
	srv.HandleFunc("/.well-known/did.json", func(w http.ResponseWriter, _ *http.Request) {
		<-gate
		w.Header().Set("Content-Type", "application/did+json")
		_, _ = w.Write(body)
	})
	r := did.NewResolver(srv.Options())
	defer r.Close()
	m := did.NewMembers(r)
	member, err := proto.PeerIDFromEd25519(listed)
	if err != nil {
		t.Fatal(err)
	}
	impostor, _ := proto.PeerIDFromEd25519(other)

	if o := m.Of(member, ""); o != nil || o.Status() != did.StatusNone {
		t.Errorf("no claim: %+v", o)
	}
	gen := m.Generation()
	if o := m.Of(member, org); o.Verified || o.Reason != did.ReasonPending || o.Status() != did.StatusPending || o.Domain != "org.example" {
		t.Errorf("first look: %+v, want pending", o)
	}
	release()
	deadline := time.Now().Add(5 * time.Second)
	for m.Of(member, org).Status() == did.StatusPending {
		if time.Now().After(deadline) {
			t.Fatal("still pending after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m.Generation() == gen {
		t.Error("Generation did not move")
	}
	if o := m.Of(member, org); !o.Verified || o.String() != "org.example" {
		t.Errorf("listed key: %+v", o)
	}
	if o, ok := m.Verified(member); !ok || o.DID != org {
		t.Errorf("Verified(member): %+v %v", o, ok)
	}
	o := m.Of(impostor, org)
	if o.Verified || o.Status() != did.StatusUnverified || !strings.Contains(o.String(), "unverified "+org) {
		t.Errorf("unlisted key: %+v", o)
	}
	if _, ok := m.Verified(impostor); ok {
		t.Error("an unlisted key is a verified member")
	}
	if o := m.Of(member, "did:web:10.0.0.1"); o.Verified || o.Status() != did.StatusUnverified {
		t.Errorf("an IP DID: %+v", o)
	}
	m.Forget(member)
	if _, ok := m.Verified(member); ok {
		t.Error("a forgotten publisher is a verified member")
	}
}
