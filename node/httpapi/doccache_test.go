package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// docSource is a document rendered from a revision that a test changes.
type docSource struct {
	rev     atomic.Int64
	renders atomic.Int64
	hold    chan struct{} // if set, a render waits for it
	status  int
}

func (s *docSource) key(r *http.Request) (string, string, bool) {
	return r.Host + r.URL.Path, fmt.Sprint(s.rev.Load()), !strings.HasPrefix(r.URL.Path, "/uncached")
}

func (s *docSource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.renders.Add(1)
	if s.hold != nil {
		<-s.hold
	}
	if s.status != 0 {
		httpapi.WriteProblem(w, r, httpapi.Problemf(s.status, "no document"))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"path": r.URL.Path, "rev": fmt.Sprint(s.rev.Load())})
}

func get(t *testing.T, h http.Handler, path, inm string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://node.test"+path, nil)
	if inm != "" {
		r.Header.Set("If-None-Match", inm)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func TestDocCacheETagAnd304(t *testing.T) {
	src := &docSource{}
	c := httpapi.NewDocCache(httpapi.DocConfig{})
	h := c.Handler(src.key, src)

	first := get(t, h, "/card", "")
	body, _ := io.ReadAll(first.Body)
	etag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || !strings.HasPrefix(etag, `"`) || first.Header.Get("Cache-Control") != httpapi.DocCacheControl ||
		first.Header.Get("Content-Type") != "application/json" || first.Header.Get("Content-Length") != fmt.Sprint(len(body)) {
		t.Fatalf("first GET: %s %v", first.Status, first.Header)
	}
	again := get(t, h, "/card", "")
	if b, _ := io.ReadAll(again.Body); string(b) != string(body) || again.Header.Get("ETag") != etag {
		t.Fatalf("second GET: %s %s, want the same bytes and etag %s", b, again.Header.Get("ETag"), etag)
	}
	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		if nm := get(t, h, "/card", inm); nm.StatusCode != http.StatusNotModified || nm.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %s, etag %q; want 304 with the etag", inm, nm.Status, nm.Header.Get("ETag"))
		}
	}
	if got := src.renders.Load(); got != 1 {
		t.Errorf("%d renders of one revision, want 1", got)
	}

	src.rev.Add(1)
	changed := get(t, h, "/card", etag)
	if changed.StatusCode != http.StatusOK || changed.Header.Get("ETag") == etag {
		t.Errorf("after a change, If-None-Match of the old etag: %s, etag %s; want 200 and a new etag", changed.Status, changed.Header.Get("ETag"))
	}
	if got := src.renders.Load(); got != 2 || c.Renders() != 2 {
		t.Errorf("%d renders (cache counts %d) after one change, want 2", got, c.Renders())
	}
	// Another key is another document.
	if other := get(t, h, "/other", etag); other.StatusCode != http.StatusOK || src.renders.Load() != 3 {
		t.Errorf("another path: %s after %d renders", other.Status, src.renders.Load())
	}
}

func TestDocCacheRendersOnceForConcurrentReaders(t *testing.T) {
	src := &docSource{hold: make(chan struct{})}
	c := httpapi.NewDocCache(httpapi.DocConfig{})
	srv := httptest.NewServer(c.Handler(src.key, src))
	defer srv.Close()
	const readers = 20
	var wg sync.WaitGroup
	etags := make(chan string, readers)
	for range readers {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/card")
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			etags <- resp.Header.Get("ETag")
		})
	}
	// Let the readers queue behind the first render, then let it end.
	deadline := time.Now().Add(5 * time.Second)
	for src.renders.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(src.hold)
	wg.Wait()
	close(etags)
	var first string
	for e := range etags {
		if first == "" {
			first = e
		}
		if e == "" || e != first {
			t.Errorf("etag %q, another reader got %q", e, first)
		}
	}
	if got := src.renders.Load(); got != 1 {
		t.Errorf("%d concurrent readers of one revision caused %d renders, want 1", readers, got)
	}
}

func TestDocCachePassesOtherAnswersThrough(t *testing.T) {
	src := &docSource{status: http.StatusNotFound}
	c := httpapi.NewDocCache(httpapi.DocConfig{})
	h := c.Handler(src.key, src)
	for range 2 {
		if resp := get(t, h, "/card", ""); resp.StatusCode != http.StatusNotFound || resp.Header.Get("ETag") != "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("a problem: %s %v, want the 404 problem, no etag", resp.Status, resp.Header)
		}
	}
	if got := src.renders.Load(); got != 2 {
		t.Errorf("%d renders of two problems, want 2 (problems are not kept)", got)
	}
	src.status = 0
	for range 2 {
		if resp := get(t, h, "/uncached", ""); resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != "" {
			t.Errorf("a request the key refuses: %s %v, want 200 without etag", resp.Status, resp.Header)
		}
	}
	if got := src.renders.Load(); got != 4 {
		t.Errorf("%d renders, want 4", got)
	}
}

func TestDocCacheBounds(t *testing.T) {
	src := &docSource{}
	// Each document is 24 bytes ({"path":"/a","rev":"0"} and a newline):
	// 4 fit in 100 bytes.
	c := httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 8, MaxBytes: 100})
	h := c.Handler(src.key, src)
	for _, p := range []string{"/a", "/b", "/c", "/d", "/e", "/a"} {
		get(t, h, p, "")
	}
	// /a was dropped (least recently used) when /e came.
	if got := src.renders.Load(); got != 6 {
		t.Errorf("%d renders, want 6: /a rendered again after /e pushed it out", got)
	}
	get(t, h, "/e", "")
	if got := src.renders.Load(); got != 6 {
		t.Errorf("%d renders, want 6: /e is still held", got)
	}
	big := httpapi.NewDocCache(httpapi.DocConfig{MaxBytes: 64})
	h = big.Handler(src.key, src)
	get(t, h, "/a-longer-path-than-a-quarter-of-the-budget", "")
	resp := get(t, h, "/a-longer-path-than-a-quarter-of-the-budget", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != "" || src.renders.Load() != 8 {
		t.Errorf("a document over a quarter of MaxBytes: %s, etag %q, %d renders; want it served each time, not kept", resp.Status, resp.Header.Get("ETag"), src.renders.Load())
	}
}
