package api

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

const testToken = "0123456789abcdef0123456789abcdef"

// guardedMux is guardAPI over a mux with the profiler, the HTTP binding's,
// A2A's and MCP's routes and the directory; calls counts what reached a
// route.
func guardedMux(all bool, cors httpapi.CORSConfig) (http.Handler, *int) {
	calls := new(int)
	count := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		*calls++
		w.WriteHeader(http.StatusNoContent)
	})
	mux := http.NewServeMux()
	for _, p := range append(append(gateway.Patterns(), a2abridge.Patterns()...), PathMCP, "/") {
		mux.Handle(p, count)
	}
	observeRoutes(mux, count, true)
	return guardAPI(testToken, all, cors, mux, testDID.auth), calls
}

// testDID is a DID-WBA caller whose key the guard's Authenticator knows
// (the resolution itself is node/did's, tested there and in package
// node).
var testDID = func() (d struct {
	did  string
	key  ed25519.PrivateKey
	auth *anp.Authenticator
}) {
	d.did = "did:wba:client.example:agents:alice"
	_, d.key, _ = ed25519.GenerateKey(rand.Reader)
	_, node, _ := ed25519.GenerateKey(rand.Reader)
	d.auth = anp.NewAuthenticator(func(_ context.Context, keyID string) (ed25519.PublicKey, error) {
		if keyID != d.did+"#key-1" {
			return nil, anp.ErrNoKey
		}
		return d.key.Public().(ed25519.PublicKey), nil
	}, nil, node, "test", anp.AuthConfig{})
	return d
}()

// TestGuardDIDWBA: with the token required for all, a DID-WBA signed
// request reaches the routes that call Things without the token, and not
// the others (administration, and MCP, whose sessions outlive a signed
// request); the token's 401 on a call route carries the DIDWba challenge
// too.
func TestGuardDIDWBA(t *testing.T) {
	h, calls := guardedMux(true, httpapi.CORSConfig{})
	n := 0
	signed := func(method, target string) *httptest.ResponseRecorder {
		n++
		r := httptest.NewRequest(method, "http://node.example"+target, strings.NewReader(`{}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(anp.HeaderContentDigest, anp.ContentDigest([]byte(`{}`)))
		if err := anp.Sign(r, "http", "sig1", anp.SigParams{Components: []string{"@method", "@target-uri", "content-digest"},
			Created: time.Now(), Nonce: strings.Repeat("n", n), KeyID: testDID.did + "#key-1"}, testDID.key); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := signed(http.MethodPost, "/things/x/actions/a"); w.Code != http.StatusNoContent || *calls != 1 ||
		!strings.Contains(w.Header().Get("Authentication-Info"), "access_token=") {
		t.Fatalf("signed call: %d %v, calls %d", w.Code, w.Header(), *calls)
	}
	for _, target := range []string{"/api/v1/things", PathMCP} {
		if w := signed(http.MethodPost, target); w.Code != http.StatusUnauthorized || *calls != 1 {
			t.Fatalf("signed request to %s: %d, calls %d", target, w.Code, *calls)
		}
	}
	w := serve(h, http.MethodPost, "/things/x/actions/a")
	if ch := w.Header().Values("WWW-Authenticate"); w.Code != http.StatusUnauthorized || len(ch) != 2 || !strings.HasPrefix(ch[1], "DIDWba ") {
		t.Fatalf("unsigned call: %d %q", w.Code, ch)
	}
	if ch := serve(h, http.MethodGet, "/things").Header().Values("WWW-Authenticate"); len(ch) != 1 {
		t.Fatalf("the directory's 401 offers %q", ch)
	}
}

func serve(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if method == http.MethodPost || method == http.MethodPut {
		body = strings.NewReader(`{}`)
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:5080"+target, body)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestGuardPprof: the profiler needs the token, also when reads are open
// to local clients (docs/config.md: "behind the token").
func TestGuardPprof(t *testing.T) {
	for _, all := range []bool{false, true} {
		h, _ := guardedMux(all, httpapi.CORSConfig{})
		for _, path := range []string{PathPprof, PathPprof + "cmdline", PathPprof + "goroutine?debug=1", PathPprof + "heap"} {
			if w := serve(h, http.MethodGet, path); w.Code != http.StatusUnauthorized {
				t.Errorf("all=%v: GET %s without the token: %d, want 401", all, path, w.Code)
			}
			if w := serve(h, http.MethodGet, path, "Authorization", "Bearer "+testToken); w.Code != http.StatusOK {
				t.Errorf("all=%v: GET %s with the token: %d %.200s, want 200", all, path, w.Code, w.Body)
			}
		}
	}
}

// TestGuardBrowserConsent: every route that acts or calls refuses what a
// web page of another origin sends, in both access modes, before the
// route runs; clients without Origin, the console and allowed origins
// reach it.
func TestGuardBrowserConsent(t *testing.T) {
	const evil = "http://127.0.0.1:6666"
	const friend = "http://127.0.0.1:3000"
	targets := []struct{ method, path string }{
		{http.MethodPost, "/things/urn:x/actions/a"},
		{http.MethodPut, "/things/urn:x/properties/p"},
		{http.MethodDelete, "/things/urn:x/actions/a/1"},
		{http.MethodPost, "/a2a/12D3KooW/urn:x/?A2A-Version=1.0"},
		{http.MethodPost, "/a2a"},
		{http.MethodPost, PathMCP},
		{http.MethodPost, "/api/v1/groups"},
		{http.MethodPost, "/api/v1/things"},
	}
	for _, all := range []bool{false, true} {
		h, calls := guardedMux(all, httpapi.CORSConfig{AllowOrigins: []string{friend}})
		for _, tg := range targets {
			auth := []string{"Authorization", "Bearer " + testToken}
			for _, tc := range []struct {
				header []string
				want   int
			}{
				{[]string{"Origin", evil, "Content-Type", "application/json"}, http.StatusForbidden},
				{[]string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}, http.StatusForbidden},
				{[]string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
				{[]string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
				{[]string{"Content-Type", "application/json"}, http.StatusNoContent},
				{[]string{"Origin", "http://127.0.0.1:5080", "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json"}, http.StatusNoContent},
				{[]string{"Origin", friend, "Content-Type", "application/json"}, http.StatusNoContent},
			} {
				if tg.method == http.MethodDelete && tc.want == http.StatusUnsupportedMediaType {
					continue // no body
				}
				before := *calls
				w := serve(h, tg.method, tg.path, append(tc.header, auth...)...)
				reached := *calls > before
				if w.Code != tc.want || reached != (tc.want == http.StatusNoContent) {
					t.Errorf("all=%v: %s %s %q: %d (route reached: %v) %.200s, want %d", all, tg.method, tg.path, tc.header, w.Code, reached, w.Body, tc.want)
				}
			}
		}
		// GET and preflights are not touched.
		if w := serve(h, http.MethodGet, "/things/urn:x/properties/p", "Origin", evil, "Authorization", "Bearer "+testToken); w.Code != http.StatusNoContent {
			t.Errorf("all=%v: GET from another origin: %d, want 204", all, w.Code)
		}
	}
}
