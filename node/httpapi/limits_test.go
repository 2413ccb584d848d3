package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// bodyTimeout is the body deadline of the tests: every long-lived
// exchange below lasts several times longer.
const bodyTimeout = 200 * time.Millisecond

// limitedServer serves h under httpapi.Limit (bodyTimeout, maxBody) on a
// loopback listener under cl, with the header limit of the node's API, and
// returns the listener and the server's address.
func limitedServer(t *testing.T, maxBody int64, cl httpapi.ConnLimits, h http.Handler) (*httpapi.Listener, string) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := httpapi.LimitListener(raw, cl)
	srv := &http.Server{
		Handler:           httpapi.Limit(httpapi.Limits{BodyTimeout: bodyTimeout, MaxBody: maxBody}, h),
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln, raw.Addr().String()
}

// waitOpen waits (up to 10 s) until ln has want open connections and
// fails the test if it does not get there.
func waitOpen(t *testing.T, ln *httpapi.Listener, want int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if ln.Open() == want {
			return
		}
	}
	t.Fatalf("server holds %d open connections, want %d", ln.Open(), want)
}

// readBodyHandler answers with the length of the body it read.
var readBodyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, p := httpapi.ReadBody(w, r, 1<<20)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, len(b))
})

func TestLimitCutsSlowBodies(t *testing.T) {
	ln, addr := limitedServer(t, 0, httpapi.ConnLimits{MaxPerClient: -1}, readBodyHandler)
	const clients = 50
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Headers at once, then 3 of the 1000 bytes announced.
		if _, err := io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nabc"); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	waitOpen(t, ln, 0)
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if !strings.HasPrefix(string(got), "HTTP/1.1 408 ") || !strings.Contains(string(got), "application/problem+json") {
			t.Fatalf("client %d got %q, want a 408 problem", i, got)
		}
	}
}

func TestLimitKeepsLongExchanges(t *testing.T) {
	const events = 6 // 100 ms apart: three times the body deadline
	mux := http.NewServeMux()
	sse := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if _, p := httpapi.ReadBody(w, r, 1<<20); p != nil {
				httpapi.WriteProblem(w, r, p)
				return
			}
		}
		s, err := httpapi.StartStream(w, httpapi.StreamConfig{WriteTimeout: time.Second})
		if err != nil {
			return
		}
		defer s.Close()
		for i := range events {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			if s.Send(httpapi.Event{Data: fmt.Sprint(i)}) != nil {
				return
			}
		}
	}
	mux.HandleFunc("/sse", sse)
	mux.HandleFunc("/ndjson", func(w http.ResponseWriter, r *http.Request) {
		httpapi.StreamBody(r)
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			_, _ = fmt.Fprintf(w, "echo %s\n", sc.Text())
			_ = rc.Flush()
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if c.Write(r.Context(), typ, b) != nil {
				return
			}
		}
	})
	_, addr := limitedServer(t, 0, httpapi.ConnLimits{}, mux)
	base := "http://" + addr

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run("sse "+method, func(t *testing.T) {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"a":1}`)
			}
			req, _ := http.NewRequest(method, base+"/sse", body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			n := 0
			for ev, err := range httpapi.ReadEvents(resp.Body, 1<<10) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Data != fmt.Sprint(n) {
					t.Fatalf("event %d: %q", n, ev.Data)
				}
				n++
			}
			if n != events {
				t.Fatalf("got %d events, want %d: the stream was cut", n, events)
			}
		})
	}

	t.Run("ndjson", func(t *testing.T) {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, base+"/ndjson", pr)
		resp := make(chan *http.Response, 1)
		errc := make(chan error, 1)
		go func() {
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				errc <- err
				return
			}
			resp <- r
		}()
		if _, err := io.WriteString(pw, "0\n"); err != nil {
			t.Fatal(err)
		}
		var r *http.Response
		select {
		case r = <-resp:
		case err := <-errc:
			t.Fatal(err)
		}
		defer r.Body.Close()
		lines := bufio.NewScanner(r.Body)
		for i := range events {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
				if _, err := fmt.Fprintf(pw, "%d\n", i); err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
			}
			if !lines.Scan() || lines.Text() != fmt.Sprintf("echo %d", i) {
				t.Fatalf("line %d: %q, %v: the stream was cut", i, lines.Text(), lines.Err())
			}
		}
		_ = pw.Close()
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		for i := range events {
			time.Sleep(100 * time.Millisecond)
			if err := c.Write(ctx, websocket.MessageText, []byte(fmt.Sprint(i))); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if _, b, err := c.Read(ctx); err != nil || string(b) != fmt.Sprint(i) {
				t.Fatalf("message %d: %q, %v", i, b, err)
			}
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
}

func TestLimitHeaderTooLarge(t *testing.T) {
	_, addr := limitedServer(t, 0, httpapi.ConnLimits{}, readBodyHandler)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2<<20))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a 2 MB header got no answer: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

// A client that writes its whole request before it reads (as many
// scripts do) still gets the answer: the server drains what it sends
// after answering instead of resetting the connection.
func TestLimitAnswersWriteFirstClients(t *testing.T) {
	_, addr := limitedServer(t, 1<<20, httpapi.ConnLimits{}, readBodyHandler)
	for _, tc := range []struct {
		name, head string
		pad        int
		want       string
	}{
		{"8 MB header", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: ", 8 << 20, "HTTP/1.1 431 "},
		{"50 MB body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 52428800\r\n\r\n", 50 << 20, "HTTP/1.1 413 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := append([]byte(tc.head), make([]byte, tc.pad)...)
			if tc.want == "HTTP/1.1 431 " {
				for i := len(tc.head); i < len(req); i++ {
					req[i] = 'a'
				}
				req = append(req, "\r\n\r\n"...)
			}
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write(req); err != nil {
				t.Fatalf("writing the request: %v (the server reset the connection)", err)
			}
			got, err := io.ReadAll(c)
			if err != nil || !strings.HasPrefix(string(got), tc.want) {
				t.Fatalf("got %.60q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestLimitBodyTooLarge(t *testing.T) {
	_, addr := limitedServer(t, 1<<20, httpapi.ConnLimits{}, readBodyHandler)
	for _, tc := range []struct {
		name   string
		length int64 // -1: chunked
	}{{"declared 50 MB", 50 << 20}, {"chunked 3 MB", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.length
			if size < 0 {
				size = 3 << 20
			}
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", io.LimitReader(zeros{}, size))
			req.ContentLength = tc.length
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			p, err := httpapi.ResponseProblem(resp, must(io.ReadAll(resp.Body)))
			if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || p.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, problem %+v, %v; want a 413 problem", resp.StatusCode, p, err)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLimitListenerCapsClients(t *testing.T) {
	const capPerClient = 3
	for _, loopback := range []bool{true, false} {
		t.Run(fmt.Sprintf("loopback=%v", loopback), func(t *testing.T) {
			ln, addr := limitedServer(t, 0, httpapi.ConnLimits{MaxPerClient: capPerClient, Loopback: loopback}, readBodyHandler)
			var held []net.Conn
			defer func() {
				for _, c := range held {
					_ = c.Close()
				}
			}()
			dial := func() net.Conn {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
				return c
			}
			for range capPerClient {
				dial()
			}
			waitOpen(t, ln, capPerClient)
			extra := dial()
			if !loopback { // loopback is exempt from the cap
				waitOpen(t, ln, capPerClient+1)
				if ln.Refused() != 0 {
					t.Fatalf("refused %d", ln.Refused())
				}
				return
			}
			_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := extra.Read(make([]byte, 1)); err == nil || isTimeout(err) {
				t.Fatalf("connection over the cap: read %v, want it closed", err)
			}
			if ln.Refused() != 1 || ln.Open() != capPerClient {
				t.Fatalf("refused %d, open %d; want 1, %d", ln.Refused(), ln.Open(), capPerClient)
			}
			// A connection closed makes room for a new one.
			_ = held[0].Close()
			waitOpen(t, ln, capPerClient-1)
			c := dial()
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Limit lifts the deadline when the body ends, so the same connection
// serves the next request with no leftover deadline.
func TestLimitKeepAliveAfterBody(t *testing.T) {
	_, addr := limitedServer(t, 0, httpapi.ConnLimits{}, readBodyHandler)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 3 {
		if i > 0 {
			time.Sleep(bodyTimeout) // past the first request's deadline
		}
		resp, err := client.Post("http://"+addr+"/", "application/json", strings.NewReader("[1,2]"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
}
