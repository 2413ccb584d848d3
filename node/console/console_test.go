package console_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/console"
)

func newConsole(t *testing.T, cfg console.Config) *console.Console {
	t.Helper()
	c, err := console.New(console.Deps{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestAssets(t *testing.T) {
	c := newConsole(t, console.Config{})
	for _, tc := range []struct{ path, want, ctype string }{
		{"/", `<script type="module" src="/console/app.js">`, "text/html"},
		{"/console/", `<script type="module" src="/console/app.js">`, "text/html"},
		{"/console/app.js", "import", "text/javascript"},
		{"/console/verify.js", "eddsa-jcs-2022", "text/javascript"},
		{"/console/app.css", "prefers-color-scheme", "text/css"},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if !console.IsAsset(r) {
			t.Errorf("%s is not an asset", tc.path)
		}
		w := httptest.NewRecorder()
		c.Assets().ServeHTTP(w, r)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tc.want) || !strings.HasPrefix(w.Header().Get("Content-Type"), tc.ctype) {
			t.Errorf("GET %s: %d %q, body without %q", tc.path, w.Code, w.Header().Get("Content-Type"), tc.want)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", tc.path, csp)
		}
	}
	// http.FileServer's 404 is plain text; the console's a problem.
	w := httptest.NewRecorder()
	c.Assets().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/console/nosuch.js", nil))
	if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(w.Body.String(), `"status":404`) ||
		!strings.Contains(w.Body.String(), `"instance":"/console/nosuch.js"`) {
		t.Errorf("GET /console/nosuch.js: %d %q %q, want a 404 problem", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/things", nil),
		httptest.NewRequest(http.MethodPost, "/", nil),
		httptest.NewRequest(http.MethodGet, "/api/v1/console/stream", nil),
	} {
		if console.IsAsset(r) {
			t.Errorf("%s %s counts as an asset", r.Method, r.URL.Path)
		}
	}
}

// TestStream: the stream sends each source at once, then only what
// changed.
func TestStream(t *testing.T) {
	var n atomic.Int64
	api := http.NewServeMux()
	api.HandleFunc("GET /api/v1/a", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"n": `+string(rune('0'+n.Load()))+`}`)
	})
	api.HandleFunc("GET /api/v1/b", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `[]`) })
	c := newConsole(t, console.Config{Sources: []string{"/api/v1/a", "/api/v1/b"}, Interval: 20 * time.Millisecond})
	srv := httptest.NewServer(c.Routes(api))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+console.StreamPath, nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() string {
		var ev []string
		for sc.Scan() {
			line := sc.Text()
			if line == "" && len(ev) > 0 {
				return strings.Join(ev, "|")
			}
			if strings.HasPrefix(line, "event:") || strings.HasPrefix(line, "data:") {
				ev = append(ev, line)
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return ""
	}
	if got := next(); got != `event: /api/v1/a|data: {"n": 0}` {
		t.Fatalf("first event %q", got)
	}
	if got := next(); got != `event: /api/v1/b|data: []` {
		t.Fatalf("second event %q", got)
	}
	n.Store(1)
	if got := next(); got != `event: /api/v1/a|data: {"n": 1}` {
		t.Fatalf("after a change: %q", got)
	}
}

func TestQR(t *testing.T) {
	c := newConsole(t, console.Config{})
	h := c.Routes(http.NotFoundHandler())
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, console.QRPath, strings.NewReader(`{"text": "lmosgroup:abc"}`)))
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/svg+xml" || !strings.Contains(w.Body.String(), `<path fill="#000" d="M`) {
		t.Fatalf("QR: %d %q %.80s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	for _, body := range []string{`{}`, `"x"`, `{"text": "` + strings.Repeat("x", 3000) + `"}`} {
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, console.QRPath, strings.NewReader(body)))
		if w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("QR of %.20s: %d", body, w.Code)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (console.Config{Sources: []string{"/things"}}).Validate(); err == nil {
		t.Error("a source outside /api/ was accepted")
	}
	if err := (console.Config{Interval: -1}).Validate(); err == nil {
		t.Error("a negative interval was accepted")
	}
}
