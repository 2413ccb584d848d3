package a2abridge

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// cardSite is an https server on 127.0.0.1 (a test CA) that serves a card
// at /card.json and a JWKS at /jwks.json, counting the JWKS reads.
type cardSite struct {
	srv   *httptest.Server
	card  atomic.Value // []byte
	jwks  atomic.Value // []byte
	reads atomic.Int32
}

func newCardSite(t *testing.T) *cardSite {
	t.Helper()
	s := &cardSite{}
	s.card.Store([]byte(`{}`))
	s.jwks.Store([]byte(`{"keys":[]}`))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /card.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(s.card.Load().([]byte)) })
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		s.reads.Add(1)
		_, _ = w.Write(s.jwks.Load().([]byte))
	})
	mux.HandleFunc("GET /moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	s.srv = httptest.NewTLSServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// signedBy returns a card signed by the node's signer of key with jku.
func signedBy(t *testing.T, key ed25519.PrivateKey, jku string) AgentCard {
	t.Helper()
	yes := true
	c := AgentCard{Name: "Remote", Description: "signed", Version: "1", Capabilities: AgentCapabilities{Streaming: &yes},
		SupportedInterfaces: []AgentInterface{{URL: "https://agent.invalid/", ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion}},
		Skills:              []AgentSkill{{ID: "s", Name: "S", Description: "s", Tags: []string{"t"}}}}
	if err := newSigner(key).sign(&c, jku); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCheckCard: the node's own signer's cards verify with a pinned key
// and with a jku on the card's https origin; a jku elsewhere is never
// read, a redirect off the origin not followed, a changed card and an
// unsigned one do not verify.
func TestCheckCard(t *testing.T) {
	site, other := newCardSite(t), newCardSite(t)
	_, key, _ := ed25519.GenerateKey(nil)
	signer := newSigner(key)
	jwks, _ := json.Marshal(signer.jwks())
	site.jwks.Store(jwks)
	other.jwks.Store(jwks)
	pinned, err := ParseKeys(jwks)
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey, _ := ed25519.GenerateKey(nil)
	wrong, _ := json.Marshal(newSigner(otherKey).jwks())
	wrongKeys, _ := ParseKeys(wrong)
	// The client trusts both test servers' CA (the same one); production
	// clients keep the system's roots (WithHTTPClient).
	cl, err := NewClient(ClientConfig{}, WithHTTPClient(site.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	cardURL := site.srv.URL + "/card.json"
	tampered := signedBy(t, key, site.srv.URL+"/jwks.json")
	tampered.Description = "changed after signing"
	for _, tc := range []struct {
		name      string
		card      AgentCard
		cardURL   string
		pinned    []byte
		want      CardTrust
		problem   string
		readsSite int32
	}{
		{"pinned key", signedBy(t, key, "https://elsewhere.invalid/jwks.json"), cardURL, jwks, CardTrust{Status: CardVerified, Kid: signer.kid, Key: "pinned"}, "", 0},
		{"same-origin jku", signedBy(t, key, site.srv.URL+"/jwks.json"), cardURL, nil, CardTrust{Status: CardVerified, Kid: signer.kid, Key: site.srv.URL + "/jwks.json"}, "", 1},
		{"a wrong pinned key, then the same-origin jku", signedBy(t, key, site.srv.URL+"/jwks.json"), cardURL, wrong, CardTrust{Status: CardVerified, Kid: signer.kid, Key: site.srv.URL + "/jwks.json"}, "", 1},
		{"foreign jku", signedBy(t, key, other.srv.URL+"/jwks.json"), cardURL, nil, CardTrust{Status: CardUnverified}, "not on the card's https origin", 0},
		{"foreign jku and a wrong pinned key", signedBy(t, key, other.srv.URL+"/jwks.json"), cardURL, wrong, CardTrust{Status: CardUnverified}, "not on the card's https origin", 0},
		{"http card, jku on its origin", signedBy(t, key, strings.Replace(site.srv.URL, "https:", "http:", 1)+"/jwks.json"), strings.Replace(cardURL, "https:", "http:", 1), nil, CardTrust{Status: CardUnverified}, "not on the card's https origin", 0},
		{"same-origin jku redirecting elsewhere", signedBy(t, key, site.srv.URL+"/moved?to="+other.srv.URL+"/jwks.json"), cardURL, nil, CardTrust{Status: CardUnverified}, "off the card's origin", 0},
		{"no jku, no pinned key", signedBy(t, key, ""), cardURL, nil, CardTrust{Status: CardUnverified}, "no jku", 0},
		{"changed after signing, pinned key", tampered, cardURL, jwks, CardTrust{Status: CardUnverified}, "does not verify", 1},
		{"unsigned", AgentCard{Name: "Remote"}, cardURL, jwks, CardTrust{Status: CardUnsigned}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site.reads.Store(0)
			other.reads.Store(0)
			raw, _ := json.Marshal(tc.card)
			var keys = pinned
			switch string(tc.pinned) {
			case "":
				keys = nil
			case string(wrong):
				keys = wrongKeys
			}
			got := cl.CheckCard(context.Background(), raw, tc.cardURL, keys)
			problem := got.Problem
			got.Problem = ""
			if got != tc.want || !strings.Contains(problem, tc.problem) || (tc.problem == "") != (problem == "") {
				t.Fatalf("got %+v (problem %q), want %+v (problem with %q)", got, problem, tc.want, tc.problem)
			}
			if site.reads.Load() != tc.readsSite || other.reads.Load() != 0 {
				t.Fatalf("JWKS reads: card's origin %d (want %d), other origin %d (want 0)", site.reads.Load(), tc.readsSite, other.reads.Load())
			}
		})
	}
}

// TestCheckCardAsServed: a signature over the card as served verifies
// even when the card has members the bridge does not model, and changing
// one of them breaks it; a signature over the card as modelled verifies
// when it is served with more members.
func TestCheckCardAsServed(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	s := newSigner(key)
	jwks, _ := json.Marshal(s.jwks())
	pinned, _ := ParseKeys(jwks)
	raw := []byte(`{"name":"R","description":"","version":"1","capabilities":{"streaming":true,"extendedAgentCard":false},"skills":[],"x-extra":{"n":[1,2.5e3]}}`)
	var tree map[string]any
	_ = json.Unmarshal(raw, &tree)
	cleaned, _ := dropEmpty(tree)
	b, _ := json.Marshal(cleaned)
	payload, err := lmosproto.Canonicalize(b)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := json.Marshal(jwsHeader{Alg: "EdDSA", Typ: "JOSE", Kid: s.kid})
	prot := base64.RawURLEncoding.EncodeToString(h)
	sig := ed25519.Sign(key, []byte(prot+"."+base64.RawURLEncoding.EncodeToString(payload)))
	signed, _ := json.Marshal(AgentCardSignature{Protected: prot, Signature: base64.RawURLEncoding.EncodeToString(sig)})
	withSig := append(raw[:len(raw)-1:len(raw)-1], []byte(`,"signatures":[`+string(signed)+`]}`)...)
	cl, _ := NewClient(ClientConfig{})
	if got := cl.CheckCard(context.Background(), withSig, "https://x.invalid/card.json", pinned); got.Status != CardVerified {
		t.Fatalf("as served: %+v", got)
	}
	changed := []byte(strings.Replace(string(withSig), `2.5e3`, `2.6e3`, 1))
	if got := cl.CheckCard(context.Background(), changed, "https://x.invalid/card.json", pinned); got.Status != CardUnverified {
		t.Fatalf("changed: %+v", got)
	}
	// A signer that signs its model of the card (here the node's), served
	// with a member more: the form the bridge reads verifies.
	modelled, _ := json.Marshal(signedBy(t, key, ""))
	served := append([]byte(`{"x-served-only":true,`), modelled[1:]...)
	if got := cl.CheckCard(context.Background(), served, "https://x.invalid/card.json", pinned); got.Status != CardVerified {
		t.Fatalf("signed as modelled, served with more: %+v", got)
	}
	tampered := []byte(strings.Replace(string(served), `"Remote"`, `"Other"`, 1))
	if got := cl.CheckCard(context.Background(), tampered, "https://x.invalid/card.json", pinned); got.Status != CardUnverified {
		t.Fatalf("signed as modelled, then changed: %+v", got)
	}
}
