package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
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
// error when it was a request. At the end the session is deleted.
//
// The bridge holds no state of its own beyond the session id and the
// negotiated protocol version: the node is the MCP server, and a restart
// of the bridge is a new session.
func Bridge(ctx context.Context, endpoint string, hc *http.Client, in io.Reader, out io.Writer) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &bridge{ctx: ctx, endpoint: endpoint, hc: hc, out: out}
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
			b.post(msg, head.ID, true) // alone: its answer carries the session id
		case "notifications/initialized":
			b.post(msg, head.ID, false)
			b.wg.Go(b.listen)
		default:
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
	ctx      context.Context
	endpoint string
	hc       *http.Client
	wg       sync.WaitGroup

	outMu sync.Mutex
	out   io.Writer

	mu      sync.Mutex
	session string // Mcp-Session-Id
	version string // the negotiated protocol version
}

func (b *bridge) request(method string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(b.ctx, method, b.endpoint, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	b.mu.Lock()
	if b.session != "" {
		req.Header.Set("Mcp-Session-Id", b.session)
	}
	if b.version != "" {
		req.Header.Set("Mcp-Protocol-Version", b.version)
	}
	b.mu.Unlock()
	return req, nil
}

// post sends one message and relays the answer.
func (b *bridge) post(msg, id json.RawMessage, initialize bool) {
	req, err := b.request(http.MethodPost, msg)
	if err != nil {
		b.fail(id, err.Error())
		return
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		if b.ctx.Err() == nil {
			b.fail(id, fmt.Sprintf("the node's MCP endpoint %s: %v", b.endpoint, err))
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
	b.relay(resp, initialize)
}

// relay writes the messages of an answer to out.
func (b *bridge) relay(resp *http.Response, initialize bool) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			b.emit(body, initialize)
		}
	case httpapi.ContentTypeEventStream:
		for ev, err := range httpapi.ReadEvents(resp.Body, maxMessage) {
			if err != nil {
				return
			}
			if ev.Data != "" {
				b.emit([]byte(ev.Data), initialize)
			}
		}
	}
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
	for b.ctx.Err() == nil {
		req, err := b.request(http.MethodGet, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", httpapi.ContentTypeEventStream)
		resp, err := b.hc.Do(req)
		if err == nil {
			switch {
			case resp.StatusCode == http.StatusMethodNotAllowed:
				_ = resp.Body.Close()
				return
			case resp.StatusCode/100 == 2:
				bo.Reset()
				b.relay(resp, false)
			}
			_ = resp.Body.Close()
		}
		select {
		case <-b.ctx.Done():
		case <-time.After(bo.NextBackOff()):
		}
	}
}

// deleteSession ends the session on the endpoint.
func (b *bridge) deleteSession() {
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, b.endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", session)
	if resp, err := b.hc.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}
