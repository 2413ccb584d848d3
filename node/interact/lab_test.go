//go:build lab

package interact

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestLabBackend is the Agent backend of the NAT lab (scripts/lab.sh nat),
// which runs this test binary (built with -tags lab) in the namespace of
// the node that publishes the Agent. It never runs in the ordinary test
// suite.
//
// It serves the HTTP backend contract (doc.go) on $LMOS_LAB_BACKEND, a
// host:port, for two actions, until the file $LMOS_LAB_STOP exists:
//
//	echo   request-reply: answers {"echo": <input>, "from": <hostname>}
//	count  streaming session: input n (1..100), one output chunk per
//	       number 1..n, then completed with n; invoked the ordinary way
//	       it answers n at once
func TestLabBackend(t *testing.T) {
	addr := os.Getenv("LMOS_LAB_BACKEND")
	if addr == "" {
		t.Skip("the lab backend runs inside the network namespaces of scripts/lab.sh only")
	}
	stop := os.Getenv("LMOS_LAB_STOP")
	if stop == "" {
		t.Fatal("LMOS_LAB_STOP: must name the file whose creation stops the backend")
	}
	from, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /actions/echo", func(w http.ResponseWriter, r *http.Request) {
		var in json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil && err != io.EOF {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"echo": in, "from": from})
	})
	mux.HandleFunc("POST /actions/count", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/x-ndjson" {
			var n int
			if err := json.NewDecoder(r.Body).Decode(&n); err != nil || n < 1 || n > 100 {
				http.Error(w, "want a number from 1 to 100", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintln(w, n)
			return
		}
		_ = http.NewResponseController(w).EnableFullDuplex()
		in := bufio.NewScanner(r.Body)
		var n int
		if !in.Scan() || json.Unmarshal(in.Bytes(), &n) != nil || n < 1 || n > 100 {
			http.Error(w, "want a first line with a number from 1 to 100", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for i := 1; i <= n; i++ {
			_, _ = fmt.Fprintf(w, "data: %d\n\n", i)
			_ = rc.Flush()
			time.Sleep(10 * time.Millisecond)
		}
		_, _ = fmt.Fprintf(w, "event: completed\ndata: %d\n\n", n)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("LAB-BACKEND listening=%s\n", ln.Addr())
	for {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = srv.Close()
}
