package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// TestBrowserConsent: what a web page can send behind the operator's back
// (a foreign Origin or Sec-Fetch-Site, a body of a CORS-safelisted type or
// none) is refused with a problem before the handler runs; what curl, the
// SDKs, the console and allowed origins send passes.
func TestBrowserConsent(t *testing.T) {
	const api = "127.0.0.1:5080"
	cors := httpapi.CORSConfig{AllowOrigins: []string{"https://console.example", "http://127.0.0.1:3000"}}
	for _, tc := range []struct {
		name   string
		method string
		host   string // default api
		cors   *httpapi.CORSConfig
		header []string
		body   string
		chunk  bool
		want   int // 0: passed on
	}{
		{name: "curl, JSON", method: "POST", header: []string{"Content-Type", "application/json"}, body: "{}"},
		{name: "curl, +json", method: "POST", header: []string{"Content-Type", "application/td+json; charset=utf-8"}, body: "{}"},
		{name: "CBOR", method: "PUT", header: []string{"Content-Type", "application/cbor"}, body: "\xa0"},
		{name: "NDJSON stream", method: "POST", header: []string{"Content-Type", "application/x-ndjson"}, chunk: true, body: "{}\n"},
		{name: "no body, no type", method: "POST"},
		{name: "DELETE", method: "DELETE"},
		{name: "GET from anywhere", method: "GET", header: []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
		{name: "HEAD from anywhere", method: "HEAD", header: []string{"Origin", "https://evil.example"}},
		{name: "OPTIONS from anywhere", method: "OPTIONS", header: []string{"Origin", "https://evil.example"}},
		{name: "console, same origin", method: "POST", header: []string{"Origin", "http://127.0.0.1:5080", "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json"}, body: "{}"},
		{name: "same origin behind a TLS proxy", method: "POST", host: "node.example", header: []string{"Origin", "https://node.example", "Content-Type", "application/json"}, body: "{}"},
		{name: "same origin, Host with the default port", method: "POST", host: "node.example:80", header: []string{"Origin", "http://node.example", "Content-Type", "application/json"}, body: "{}"},
		{name: "allowed origin", method: "POST", header: []string{"Origin", "https://console.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}, body: "{}"},
		{name: "allowed origin, another port", method: "PUT", header: []string{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site", "Content-Type", "application/json"}, body: "{}"},
		{name: "every origin allowed", method: "POST", cors: &httpapi.CORSConfig{AllowOrigins: []string{"*"}}, header: []string{"Origin", "https://evil.example", "Content-Type", "application/json"}, body: "{}"},
		{name: "Sec-Fetch-Site none (the user)", method: "POST", header: []string{"Sec-Fetch-Site", "none", "Content-Type", "application/json"}, body: "{}"},

		{name: "foreign origin", method: "POST", header: []string{"Origin", "https://evil.example", "Content-Type", "application/json"}, body: "{}", want: 403},
		{name: "another port of the same host", method: "POST", header: []string{"Origin", "http://127.0.0.1:5081", "Sec-Fetch-Site", "same-site", "Content-Type", "application/json"}, body: "{}", want: 403},
		{name: "localhost is not 127.0.0.1", method: "POST", header: []string{"Origin", "http://localhost:5080"}, want: 403},
		{name: "opaque origin", method: "POST", header: []string{"Origin", "null"}, want: 403},
		{name: "origin with a path", method: "POST", header: []string{"Origin", "http://127.0.0.1:5080/x"}, want: 403},
		{name: "foreign origin, DELETE", method: "DELETE", header: []string{"Origin", "https://evil.example"}, want: 403},
		{name: "foreign origin, bearer token", method: "POST", header: []string{"Origin", "https://evil.example", "Authorization", "Bearer x", "Content-Type", "application/json"}, body: "{}", want: 403},
		{name: "cross-site, no Origin", method: "POST", header: []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}, body: "{}", want: 403},
		{name: "same-site, no Origin", method: "POST", header: []string{"Sec-Fetch-Site", "same-site"}, want: 403},
		{name: "origin not in the list", method: "POST", header: []string{"Origin", "https://console.example:8443", "Content-Type", "application/json"}, body: "{}", want: 403},

		{name: "text/plain", method: "POST", header: []string{"Content-Type", "text/plain;charset=UTF-8"}, body: "{}", want: 415},
		{name: "form", method: "POST", header: []string{"Content-Type", "application/x-www-form-urlencoded"}, body: "a=b", want: 415},
		{name: "multipart", method: "PUT", header: []string{"Content-Type", "multipart/form-data; boundary=x"}, body: "--x--", want: 415},
		{name: "no type with a body", method: "POST", body: "{}", want: 415},
		{name: "no type, chunked body", method: "POST", body: "{}", chunk: true, want: 415},
		{name: "unparsable type", method: "POST", header: []string{"Content-Type", "text/plain; ;"}, body: "{}", want: 415},
		{name: "text/plain, same origin", method: "POST", header: []string{"Origin", "http://127.0.0.1:5080", "Content-Type", "text/plain"}, body: "{}", want: 415},
		{name: "text/plain, bearer token", method: "POST", header: []string{"Authorization", "Bearer x", "Content-Type", "text/plain"}, body: "{}", want: 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached := false
			cfg := cors
			if tc.cors != nil {
				cfg = *tc.cors
			}
			h := httpapi.BrowserConsent(cfg, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				reached = true
				w.WriteHeader(http.StatusNoContent)
			}))
			r := httptest.NewRequest(tc.method, "http://"+api+"/things/urn:x/actions/a", strings.NewReader(tc.body))
			if tc.body == "" {
				r.Body, r.ContentLength = http.NoBody, 0
			}
			if tc.chunk {
				r.ContentLength = -1
			}
			if tc.host != "" {
				r.Host = tc.host
			}
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tc.want == 0 {
				if !reached || w.Code != http.StatusNoContent {
					t.Fatalf("refused: %d %s", w.Code, w.Body)
				}
				return
			}
			if reached {
				t.Fatal("passed on, want refused")
			}
			p, err := httpapi.ResponseProblem(w.Result(), w.Body.Bytes())
			if err != nil || w.Code != tc.want || p.Status != tc.want || p.Detail == "" {
				t.Fatalf("%d %s (%v), want a %d problem", w.Code, w.Body, err, tc.want)
			}
		})
	}
}
