package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

// Bridge is `lmosnode mcp`: it relays MCP between a host that launched it
// (newline-delimited JSON-RPC on in and out, MCP's stdio transport) and
// the node's Streamable HTTP endpoint, unchanged, until in ends or ctx is
// done. Each message from the host is POSTed (the initialize request
// first and alone, for the session id it returns); JSON and
// event-stream answers go to out line by line; after
// notifications/initialized a GET stream carries what the server sends
// unasked (notifications/tools/list_changed), reopened with backoff when
// it drops. A message the endpoint refuses is answered with a JSON-RPC
// error when it was a request. At the end the session is deleted. A host
// that speaks 2026-07-28 (its requests name the version in _meta) has no
// session: each of its requests is POSTed alone (stdio_modern.go).
//
// The node is the MCP server; the bridge keeps only the session id, the
// negotiated protocol version and the host's initialize and initialized
// messages. When the node restarts (the endpoint refuses the connection,
// or answers 404 for the session) the bridge asks endpoint for the URL
// again (a restarted node may listen elsewhere), replays the host's
// initialize and initialized to open a new session (again, with
// backoff, while a node still starting refuses them), and sends the
// message again: the host keeps its session across restarts of the
// node. Nothing else is retried, so a call is never run twice.
func Bridge(ctx context.Context, endpoint func() (string, error), hc *http.Client, in io.Reader, out io.Writer) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	url, err := endpoint()
	if err != nil {
		return fmt.Errorf("mcp stdio: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &bridge{ctx: ctx, endpoints: endpoint, endpoint: url, hc: hc, out: out, inflight: map[string]context.CancelFunc{}}
	defer func() {
		cancel()
		b.wg.Wait()
		b.deleteSession()
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxMessage)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		msg := bytes.Clone(line)
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(msg, &head) // not JSON: the endpoint answers
		switch head.Method {
		case "initialize":
			b.mu.Lock()
			b.initMsg = msg
			b.mu.Unlock()
			b.post(msg, head.ID, true) // alone: its answer carries the session id
		case "notifications/initialized":
			b.mu.Lock()
			b.initializedMsg = msg
			b.mu.Unlock()
			b.post(msg, head.ID, false)
			b.wg.Go(b.listen)
		default:
			if h := modernHeaders(msg); h != nil {
				b.wg.Go(func() { b.postModern(msg, head.ID, h) })
				continue
			}
			if head.Method == "notifications/cancelled" && b.cancelModern(msg) {
				continue
			}
			b.wg.Go(func() { b.post(msg, head.ID, false) })
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("mcp stdio: %w", err)
	}
	return nil
}

// maxMessage bounds one message either way.
const maxMessage = 16 << 20

type bridge struct {
	ctx       context.Context
	endpoints func() (string, error)
	hc        *http.Client
	wg        sync.WaitGroup

	outMu sync.Mutex
	out   io.Writer

	resumeMu sync.Mutex // one resume at a time

	mu             sync.Mutex
	endpoint       string // the node's /mcp
	session        string // Mcp-Session-Id
	version        string // the negotiated protocol version
	initMsg        []byte // the host's initialize request
	initializedMsg []byte // the host's notifications/initialized
	// The POSTs of the host's 2026-07-28 requests in flight, by id
	// (stdio_modern.go).
	inflight map[string]context.CancelFunc
}

// request builds a request to the endpoint in the current session; it
// returns the session it names.
func (b *bridge) request(method string, body []byte) (*http.Request, string, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	b.mu.Lock()
	endpoint, session, version := b.endpoint, b.session, b.version
	b.mu.Unlock()
	req, err := http.NewRequestWithContext(b.ctx, method, endpoint, r)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	return req, session, nil
}

// send POSTs msg in the current session. When the session is gone (the
// node restarted: connection refused, or 404 for the session) and the
// host has initialized, it resumes and sends once more; the message was
// not processed either time it failed so.
func (b *bridge) send(msg []byte, resumable bool) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, session, err := b.request(http.MethodPost, msg)
		if err != nil {
			return nil, err
		}
		resp, err := b.hc.Do(req)
		gone := errors.Is(err, syscall.ECONNREFUSED) || err == nil && resp.StatusCode == http.StatusNotFound && session != ""
		if !gone || !resumable || attempt > 0 || b.ctx.Err() != nil {
			return resp, err
		}
		if resp != nil {
			_ = resp.Body.Close()
		}
		if rerr := b.resume(session); rerr != nil {
			return nil, rerr
		}
	}
}

// resume opens a new session in place of stale: the endpoint read again,
// the host's initialize and initialized replayed (the answer to initialize
// is not relayed, the host has had one). Concurrent callers resume once.
func (b *bridge) resume(stale string) error {
	b.resumeMu.Lock()
	defer b.resumeMu.Unlock()
	b.mu.Lock()
	current, initMsg, initializedMsg := b.session, b.initMsg, b.initializedMsg
	b.mu.Unlock()
	if current != stale {
		return nil // resumed meanwhile
	}
	if initMsg == nil || initializedMsg == nil {
		return errors.New("the session ended before the host initialized it")
	}
	url, err := b.endpoints()
	if err != nil {
		return fmt.Errorf("finding the node again: %w", err)
	}
	b.mu.Lock()
	b.endpoint, b.session = url, ""
	b.mu.Unlock()
	resp, err := b.send(initMsg, false)
	if err != nil {
		return fmt.Errorf("re-initializing with %s: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMessage))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("re-initializing with %s: %s", url, resp.Status)
	}
	b.mu.Lock()
	b.session = resp.Header.Get("Mcp-Session-Id")
	b.mu.Unlock()
	if resp, err = b.send(initializedMsg, false); err != nil {
		return fmt.Errorf("re-initializing with %s: %w", url, err)
	}
	_ = resp.Body.Close()
	// What the node offers may have changed while it was away.
	b.emit([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`), false)
	return nil
}

// post sends one message and relays the answer.
func (b *bridge) post(msg, id json.RawMessage, initialize bool) {
	resp, err := b.send(msg, !initialize)
	if err != nil {
		if b.ctx.Err() == nil {
			b.fail(id, fmt.Sprintf("the node's MCP endpoint: %v", err))
		}
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		b.fail(id, fmt.Sprintf("the node's MCP endpoint answered %s: %s", resp.Status, strings.TrimSpace(string(body))))
		return
	}
	if initialize {
		b.mu.Lock()
		b.session = resp.Header.Get("Mcp-Session-Id")
		b.mu.Unlock()
	}
	if !b.relay(resp, initialize, id) && resp.StatusCode != http.StatusAccepted && b.ctx.Err() == nil {
		// The answer ended without the response (the node went down
		// during the call): the host must not wait for it forever.
		b.fail(id, "the node's answer ended before the response")
	}
}

// relay writes the messages of an answer to out.
func (b *bridge) relay(resp *http.Response, initialize bool, id json.RawMessage) (answered bool) {
	deliver := func(msg []byte) {
		b.emit(msg, initialize)
		answered = answered || answers(msg, id)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			deliver(body)
		}
	case httpapi.ContentTypeEventStream:
		for ev, err := range httpapi.ReadEvents(resp.Body, maxMessage) {
			if err != nil {
				return answered
			}
			if ev.Data != "" {
				deliver([]byte(ev.Data))
			}
		}
	}
	return answered
}

// answers reports whether msg is the response to the request id.
func answers(msg []byte, id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	var r struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Method != "" {
		return false
	}
	var a, b bytes.Buffer
	return json.Compact(&a, r.ID) == nil && json.Compact(&b, id) == nil && bytes.Equal(a.Bytes(), b.Bytes())
}

// emit writes one message as one line; the answer to initialize tells the
// protocol version later requests name.
func (b *bridge) emit(msg []byte, initialize bool) {
	var line bytes.Buffer
	if err := json.Compact(&line, msg); err != nil {
		return
	}
	if initialize {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
			b.mu.Lock()
			b.version = r.Result.ProtocolVersion
			b.mu.Unlock()
		}
	}
	line.WriteByte('\n')
	b.outMu.Lock()
	defer b.outMu.Unlock()
	_, _ = b.out.Write(line.Bytes())
}

// fail answers the request id (if the message was one) with a JSON-RPC
// internal error.
func (b *bridge) fail(id json.RawMessage, detail string) {
	if len(id) == 0 || string(id) == "null" {
		return
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": detail}})
	b.emit(msg, false)
}

// listen holds the GET stream of server-initiated messages open until
// the bridge ends; the endpoint's 405 means it has none.
func (b *bridge) listen() {
	bo := backoff.New(200*time.Millisecond, 10*time.Second)
	// retry is set while a resume failed: it cleared the session, so
	// nothing the endpoint answers would call for one again (a node
	// still starting answers a GET without a session with 400).
	retry := false
	for b.ctx.Err() == nil {
		if retry {
			b.mu.Lock()
			session := b.session
			b.mu.Unlock()
			if retry = b.resume(session) != nil; retry {
				b.wait(bo)
				continue
			}
		}
		req, session, err := b.request(http.MethodGet, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", httpapi.ContentTypeEventStream)
		resp, err := b.hc.Do(req)
		switch {
		case err != nil && errors.Is(err, syscall.ECONNREFUSED) || err == nil && resp.StatusCode == http.StatusNotFound && session != "":
			// The node restarted: a new session, and the stream of it.
			if resp != nil {
				_ = resp.Body.Close()
			}
			retry = b.resume(session) != nil
		case err != nil:
		case resp.StatusCode == http.StatusMethodNotAllowed:
			_ = resp.Body.Close()
			return
		case resp.StatusCode/100 == 2:
			bo.Reset()
			b.relay(resp, false, nil)
			_ = resp.Body.Close()
		default:
			_ = resp.Body.Close()
		}
		b.wait(bo)
	}
}

// wait waits the next backoff, or until the bridge ends.
func (b *bridge) wait(bo *backoff.Backoff) {
	select {
	case <-b.ctx.Done():
	case <-time.After(bo.NextBackOff()):
	}
}

// deleteSession ends the session on the endpoint.
func (b *bridge) deleteSession() {
	b.mu.Lock()
	endpoint, session := b.endpoint, b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := b.hc.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}
