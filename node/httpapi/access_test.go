package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// TestLoopbackHostOnly: only a loopback address or localhost, with a
// numeric port or none, passes; a host name that starts like one is a
// host name (DNS rebinding).
func TestLoopbackHostOnly(t *testing.T) {
	h := httpapi.LoopbackHostOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for host, want := range map[string]int{
		"127.0.0.1:5080": http.StatusNoContent,
		"127.0.0.1":      http.StatusNoContent,
		"127.1.2.3:80":   http.StatusNoContent,
		"localhost:5080": http.StatusNoContent,
		"localhost":      http.StatusNoContent,
		"[::1]:5080":     http.StatusNoContent,
		"[::1]":          http.StatusNoContent,

		"127.0.0.1:5100.evil.com": http.StatusForbidden,
		"127.0.0.1:5080:1":        http.StatusForbidden,
		"127.0.0.1:":              http.StatusForbidden,
		"127.0.0.1:123456":        http.StatusForbidden,
		"localhost:x":             http.StatusForbidden,
		"localhost.evil.com:5080": http.StatusForbidden,
		"127.0.0.1.evil.com":      http.StatusForbidden,
		"[::1%eth0]:5080":         http.StatusForbidden,
		"evil.example:5080":       http.StatusForbidden,
		"192.168.1.2:5080":        http.StatusForbidden,
		"":                        http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodGet, "/things", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}
