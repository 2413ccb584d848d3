package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node"
)

// An HTTP backend that drops its connection in the middle of a streamed
// answer: the consumer's session stream ends with a "failed" event and a
// plain invocation with a 502, not silence until the action timeout. (The
// backend closes the connection as a killed process's kernel does; a
// backend that goes silent with its connection open is a slow backend, ended
// by the action timeout.)
func TestBackendDropsMidStream(t *testing.T) {
	for _, mode := range []string{"session", "plain"} {
		t.Run(mode, func(t *testing.T) {
			drop := make(chan struct{})
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					http.NotFound(w, r)
					return
				}
				_ = http.NewResponseController(w).EnableFullDuplex()
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				fmt.Fprint(w, "data: \"CHUNK\"\n\n")
				w.(http.Flusher).Flush()
				<-drop
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
			}))
			defer backend.Close()
			n, err := node.New(testnet.Config(t), node.WithLogger(testnet.Logger(t)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = n.Close() }()
			id := testnet.UniqueID(t)
			raw, err := json.Marshal(deviceTD(t, id))
			if err != nil {
				t.Fatal(err)
			}
			a := newAPI(t, n)
			a.expect("POST", "/api/v1/things", `{"td": `+string(raw)+`, "backend": "`+backend.URL+`"}`, 201)

			pr, pw := io.Pipe()
			defer pw.Close()
			var body io.Reader
			if mode == "session" {
				body = pr
				go func() { _, _ = io.WriteString(pw, "\"hello\"\n") }()
			}
			req, err := http.NewRequestWithContext(ctx, "POST", a.base+thingPath(id)+"/actions/shout", body)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "session" {
				req.Header.Set("Content-Type", "application/x-ndjson")
				req.Header.Set("Accept", "text/event-stream")
			} else {
				req.Header.Set("Content-Type", "application/json")
			}
			close(drop) // the backend drops right after its first chunk
			resp, err := a.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// the consumer keeps its body open: the answer must end anyway
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the answer: %v (%s)", err, got)
			}
			want, status := "event: failed\ndata: {", 200
			if mode == "plain" {
				want, status = `"status":502`, 502
			}
			if resp.StatusCode != status || !strings.Contains(string(got), want) || !strings.Contains(string(got), "502") {
				t.Fatalf("answer %d %q, want %d with %q and a 502 problem", resp.StatusCode, got, status, want)
			}
		})
	}
}
