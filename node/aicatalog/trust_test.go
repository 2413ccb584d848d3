package aicatalog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// signed returns an entry signed by a new key over artifact, and the key.
func signed(t *testing.T, artifact []byte, now time.Time) (*Entry, ed25519.PrivateKey) {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	e := &Entry{Identifier: "urn:air:example.com:a2a:x", DisplayName: "X", Type: TypeA2ACard, URL: "http://127.0.0.1:1/card.json"}
	if err := SignEntry(key, e, artifact, now); err != nil {
		t.Fatal(err)
	}
	return e, key
}

// edit returns e's manifest changed by f (as a JSON object).
func edit(t *testing.T, raw json.RawMessage, f func(m map[string]any)) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

// TestVerifyManifest: a manifest the node signs verifies over its
// artifact; every change the AI Catalog spec says must fail does.
func TestVerifyManifest(t *testing.T) {
	now := time.Now()
	art := []byte(`{"name":"X"}`)
	e, _ := signed(t, art, now)
	m := e.TrustManifests[0]
	if s, err := VerifyManifest(m, e, Digest(art), now); err != nil || !strings.HasPrefix(s, "did:key:z6Mk") {
		t.Fatalf("VerifyManifest: %q %v", s, err)
	}
	other, _ := signed(t, art, now)
	for name, c := range map[string]struct {
		raw    json.RawMessage
		entry  func(*Entry)
		digest string
		at     time.Time
		want   string
	}{
		"other bytes":          {raw: m, digest: Digest(append(art, ' ')), want: "is not the signed"},
		"another entry":        {raw: m, entry: func(e *Entry) { e.Identifier += "-2" }, want: "is not the entry"},
		"entry version added":  {raw: m, entry: func(e *Entry) { e.Version = "1.0.0" }, want: "version"},
		"unknown member added": {raw: edit(t, m, func(m map[string]any) { m["extensions"] = map[string]any{"x": 1} }), want: "jws"},
		"contributor changed":  {raw: edit(t, m, func(m map[string]any) { m["contributor"] = "did:key:z6Mkother" }), want: "not the contributor"},
		"other profile":        {raw: edit(t, m, func(m map[string]any) { m["signature"].(map[string]any)["profile"] = "did-web-v1" }), want: "not supported"},
		"other signer's jws": {raw: edit(t, m, func(m map[string]any) {
			var o map[string]any
			_ = json.Unmarshal(other.TrustManifests[0], &o)
			m["signature"].(map[string]any)["jws"] = o["signature"].(map[string]any)["jws"]
		}), want: "jws"},
		"issued in the future": {raw: m, at: now.Add(-time.Hour), want: "future"},
		"expired": {raw: edit(t, m, func(m map[string]any) {
			m["signature"].(map[string]any)["expiresAt"] = now.Add(time.Second).UTC().Format(time.RFC3339)
		}), at: now.Add(time.Hour), want: "expired"},
		"unsigned": {raw: edit(t, m, func(m map[string]any) { delete(m, "signature") }), want: "unsigned"},
	} {
		t.Run(name, func(t *testing.T) {
			ec := *e
			if c.entry != nil {
				c.entry(&ec)
			}
			digest, at := c.digest, c.at
			if digest == "" {
				digest = Digest(art)
			}
			if at.IsZero() {
				at = now
			}
			if _, err := VerifyManifest(c.raw, &ec, digest, at); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestSameHostRedirects: an import's fetch follows a redirect on the
// same host and refuses one to another.
func TestSameHostRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("elsewhere")) }))
	defer other.Close()
	var self *httptest.Server
	self = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, self.URL+"/doc", http.StatusFound)
		case "/big":
			_, _ = w.Write(make([]byte, 2048))
		default:
			_, _ = w.Write([]byte("doc"))
		}
	}))
	defer self.Close()
	h := &Handler{cfg: Config{FetchTimeout: 5 * time.Second}, client: sameHostClient(nil), now: time.Now}
	defer h.client.CloseIdleConnections()
	if b, err := h.fetch(t.Context(), self.URL+"/here", 1024); err != nil || string(b) != "doc" {
		t.Fatalf("same host: %q %v", b, err)
	}
	if _, err := h.fetch(t.Context(), self.URL+"/away", 1024); err == nil || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("other host: %v", err)
	}
	if _, err := h.fetch(t.Context(), self.URL+"/big", 1024); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("too long: %v", err)
	}
}
