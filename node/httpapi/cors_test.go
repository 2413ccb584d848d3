package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

func TestCORSConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		origins []string
		bad     string // part of the error; "" for valid
	}{
		{nil, ""},
		{[]string{"https://console.example"}, ""},
		{[]string{"http://localhost:3000", "https://[::1]:8443"}, ""},
		{[]string{"*"}, ""},
		{[]string{"*", "https://a.example"}, `"*" allows every origin`},
		{[]string{"https://a.example/"}, "no user, path"},
		{[]string{"https://a.example/console"}, "no user, path"},
		{[]string{"https://a.example?x"}, "no user, path"},
		{[]string{"https://u@a.example"}, "no user, path"},
		{[]string{"ftp://a.example"}, `"http://" or "https://"`},
		{[]string{"a.example"}, `"http://" or "https://"`},
		{[]string{"https://A.example"}, `"https://a.example"`},
		{[]string{"https://a.example:443"}, "default port"},
		{[]string{"http://a.example:80"}, "default port"},
		{[]string{"https://a.example:99999"}, "1–65535"},
		{[]string{""}, "allowOrigins[0]"},
	} {
		err := httpapi.CORSConfig{AllowOrigins: tc.origins}.Validate()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.origins, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%q: error %v, want one containing %q", tc.origins, err, tc.bad)
		}
	}
}

// corsRequest sends one request through handler and returns the recorder.
func corsRequest(handler http.Handler, method, origin string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:5080/things", nil)
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w
}

func TestCORS(t *testing.T) {
	const console = "https://console.example"
	reached := 0
	inner := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached++
		w.Header().Set("Location", "/things/x")
		w.WriteHeader(http.StatusOK)
	})
	token := "0123456789abcdef0123456789abcdef"
	// The node's order: CORS outside the token guard.
	guarded := httpapi.CORS(httpapi.CORSConfig{AllowOrigins: []string{console}}, httpapi.RequireBearer(token, inner))
	preflight := []string{"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization,content-type"}

	t.Run("off by default", func(t *testing.T) {
		h := httpapi.CORS(httpapi.CORSConfig{}, inner)
		w := corsRequest(h, http.MethodGet, console)
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("Access-Control-Allow-Origin %q without configured origins", got)
		}
		if got := w.Header().Get("Vary"); got != "" {
			t.Errorf("Vary %q without configured origins", got)
		}
	})
	t.Run("preflight without token", func(t *testing.T) {
		reached = 0
		w := corsRequest(guarded, http.MethodOptions, console, preflight...)
		if w.Code != http.StatusNoContent {
			t.Fatalf("status %d, want 204", w.Code)
		}
		h := w.Header()
		for name, want := range map[string]string{
			"Access-Control-Allow-Origin":  console,
			"Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
			"Access-Control-Max-Age":       "600",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
		for _, hdr := range []string{"Authorization", "Content-Type", "Last-Event-ID"} {
			if !strings.Contains(h.Get("Access-Control-Allow-Headers"), hdr) {
				t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), hdr)
			}
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("Access-Control-Allow-Credentials set; the API does not use cookies")
		}
		if v := strings.Join(h.Values("Vary"), ","); !strings.Contains(v, "Origin") {
			t.Errorf("Vary %q lacks Origin", v)
		}
		if reached != 0 {
			t.Error("the preflight reached the handler")
		}
	})
	t.Run("request of an allowed origin without token", func(t *testing.T) {
		w := corsRequest(guarded, http.MethodGet, console)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401: CORS must not open the token guard", w.Code)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != console {
			t.Errorf("Access-Control-Allow-Origin %q on the 401, want %q (the page must see the 401)", got, console)
		}
	})
	t.Run("request of an allowed origin with token", func(t *testing.T) {
		reached = 0
		w := corsRequest(guarded, http.MethodGet, console, "Authorization", "Bearer "+token)
		if w.Code != http.StatusOK || reached != 1 {
			t.Fatalf("status %d, reached %d", w.Code, reached)
		}
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != console {
			t.Errorf("Access-Control-Allow-Origin %q, want %q", got, console)
		}
		for _, hdr := range []string{"Location", "Link", "ETag"} {
			if !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), hdr) {
				t.Errorf("Access-Control-Expose-Headers %q lacks %s", w.Header().Get("Access-Control-Expose-Headers"), hdr)
			}
		}
	})
	t.Run("other origin", func(t *testing.T) {
		for _, method := range []string{http.MethodOptions, http.MethodGet} {
			w := corsRequest(guarded, method, "https://evil.example", preflight...)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s: status %d, want the guard's 401", method, w.Code)
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s: Access-Control-Allow-Origin %q for an origin not allowed", method, got)
			}
		}
	})
	t.Run("no origin", func(t *testing.T) {
		w := corsRequest(guarded, http.MethodGet, "", "Authorization", "Bearer "+token)
		if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("status %d, Access-Control-Allow-Origin %q", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
		}
	})
	t.Run("any origin", func(t *testing.T) {
		h := httpapi.CORS(httpapi.CORSConfig{AllowOrigins: []string{"*"}}, inner)
		w := corsRequest(h, http.MethodGet, "https://anyone.example")
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("Access-Control-Allow-Origin %q, want *", got)
		}
	})
	t.Run("inside the loopback Host check", func(t *testing.T) {
		// The node's order without a token: a rebound host name gets no
		// CORS answer, not even to a preflight.
		h := httpapi.LoopbackHostOnly(httpapi.CORS(httpapi.CORSConfig{AllowOrigins: []string{"*"}}, inner))
		r := httptest.NewRequest(http.MethodOptions, "http://evil.example:5080/things", nil)
		r.Header.Set("Origin", "http://evil.example:5080")
		r.Header.Set("Access-Control-Request-Method", "GET")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("status %d, Access-Control-Allow-Origin %q; want 403 without CORS", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
		}
	})
}

// TestCORSWebSocketOriginPatterns: each allowed origin matches itself
// only (as coder/websocket matches a pattern with "://": path.Match
// against the Origin's scheme://host), "*" every host.
func TestCORSWebSocketOriginPatterns(t *testing.T) {
	cfg := httpapi.CORSConfig{AllowOrigins: []string{"https://console.example", "http://[::1]:3000"}}
	patterns := cfg.WebSocketOriginPatterns()
	for _, tc := range []struct {
		origin string
		want   bool
	}{
		{"https://console.example", true},
		{"http://[::1]:3000", true},
		{"http://console.example", false},
		{"https://console.example.evil", false},
		{"http://:", false},
		{"http://1:3000", false},
	} {
		got := false
		for _, p := range patterns {
			if ok, err := path.Match(p, tc.origin); err != nil {
				t.Fatalf("pattern %q: %v", p, err)
			} else if ok {
				got = true
			}
		}
		if got != tc.want {
			t.Errorf("%s: matched %v, want %v (patterns %q)", tc.origin, got, tc.want, patterns)
		}
	}
	if got := (httpapi.CORSConfig{AllowOrigins: []string{"*"}}).WebSocketOriginPatterns(); len(got) != 1 || got[0] != "*" {
		t.Errorf(`["*"]: %q`, got)
	}
	if got := (httpapi.CORSConfig{}).WebSocketOriginPatterns(); got != nil {
		t.Errorf("no origins: %q", got)
	}
}
