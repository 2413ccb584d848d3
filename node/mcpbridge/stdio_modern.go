package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

// The relay of a host that speaks 2026-07-28 over stdio: such a host
// opens with server/discover instead of initialize and names the protocol
// version in every request's _meta. The bridge POSTs each such request
// alone, with the headers Streamable HTTP asks of it (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name) and no session; it relays the answer whatever its
// status when it is JSON-RPC (UnsupportedProtocolVersion, HeaderMismatch
// and the like are what the host negotiates with); and the host's
// notifications/cancelled of such a request closes its POST, which is
// 2026-07-28's cancellation over HTTP. A subscriptions/listen outlives
// restarts of the node (holdListen).

// modernHeaders are the headers of msg if it is a request of the
// stateless era (its _meta names 2026-07-28 or later), else nil.
func modernHeaders(msg []byte) http.Header {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
			Name *string                    `json:"name"`
			URI  *string                    `json:"uri"`
		} `json:"params"`
	}
	var version string
	if json.Unmarshal(msg, &m) != nil || json.Unmarshal(m.Params.Meta[metaProtocolVersion], &version) != nil || version < RevisionStateless {
		return nil
	}
	h := http.Header{}
	h.Set(headerProtocolVersion, version)
	h.Set("Mcp-Method", m.Method)
	name := m.Params.Name
	if m.Method == "resources/read" {
		name = m.Params.URI
	}
	if name != nil && (m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read") {
		h.Set("Mcp-Name", headerValue(*name))
	}
	return h
}

// headerValue is s as an MCP header value: as it is when it is plain
// ASCII without edge whitespace, else in the =?base64?…?= sentinel.
func headerValue(s string) string {
	plain := strings.TrimSpace(s) == s && (!strings.HasPrefix(s, "=?base64?") || !strings.HasSuffix(s, "?="))
	for _, c := range s {
		plain = plain && c >= 0x20 && c <= 0x7E
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// postModern sends the request msg of the stateless era and relays its
// answer; a subscriptions/listen is held open (holdListen).
func (b *bridge) postModern(msg, id json.RawMessage, h http.Header) {
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	key := idKey(id)
	b.mu.Lock()
	b.inflight[key] = cancel
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.inflight, key)
		b.mu.Unlock()
	}()
	resp, err := b.sendModern(ctx, msg, h)
	if err != nil {
		if ctx.Err() == nil {
			b.fail(id, fmt.Sprintf("the node's MCP endpoint: %v", err))
		}
		return
	}
	if h.Get("Mcp-Method") == "subscriptions/listen" {
		b.holdListen(ctx, resp, msg, id, h)
		return
	}
	if b.relayModern(ctx, resp, id) {
		// The node went down during the call: the host must not wait
		// for the response forever.
		b.fail(id, "the node's answer ended before the response")
	}
}

// sendModern POSTs msg; a refused connection (the node restarted) finds
// the endpoint again and sends once more, since the message was not
// processed.
func (b *bridge) sendModern(ctx context.Context, msg []byte, h http.Header) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		endpoint := b.endpoint
		b.mu.Unlock()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(msg))
		if err != nil {
			return nil, err
		}
		req.Header = h.Clone()
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		resp, err := b.hc.Do(req)
		if !errors.Is(err, syscall.ECONNREFUSED) || attempt > 0 {
			return resp, err
		}
		url, err := b.endpoints()
		if err != nil {
			return nil, fmt.Errorf("finding the node again: %w", err)
		}
		b.mu.Lock()
		b.endpoint = url
		b.mu.Unlock()
	}
}

// relayModern relays the answer resp to the request id and closes it: a
// JSON-RPC body whatever the status, another refusal as an error. It
// reports whether the stream dropped before the response while the
// request was not cancelled.
func (b *bridge) relayModern(ctx context.Context, resp *http.Response, id json.RawMessage) (dropped bool) {
	defer func() { _ = resp.Body.Close() }()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 && ct != "application/json" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		b.fail(id, fmt.Sprintf("the node's MCP endpoint answered %s: %s", resp.Status, strings.TrimSpace(string(body))))
		return false
	}
	if b.relay(resp, false, id) || ctx.Err() != nil {
		return false
	}
	return true
}

// holdListen relays the stream of the host's subscriptions/listen, resp,
// and holds the subscription while the node goes away: when the stream
// drops, or the node ends a subscription it agreed to (gracefully, with
// the listen's result, as a node that shuts down does), the bridge POSTs
// the listen again, with backoff, until the host cancels it or the bridge
// ends, and tells the host notifications/tools/list_changed when the node
// is back, since what it offers may have changed meanwhile (as resume
// does for a session). The host sees the bridge as its server, and that
// server did not end the subscription.
func (b *bridge) holdListen(ctx context.Context, resp *http.Response, msg, id json.RawMessage, h http.Header) {
	bo := backoff.New(200*time.Millisecond, listenBackoffMax)
	for {
		opened := time.Now()
		if !b.relayListen(ctx, resp, id) {
			return
		}
		if time.Since(opened) > listenBackoffMax {
			bo.Reset() // it was held a while: not a node that ends each one at once
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(bo.NextBackOff()):
			}
			var err error
			if resp, err = b.sendModern(ctx, msg, h); err == nil {
				break
			}
		}
		if resp.StatusCode/100 == 2 {
			b.emit([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`), false)
		}
	}
}

// listenBackoffMax bounds the wait between two POSTs of a held listen.
const listenBackoffMax = 10 * time.Second

// relayListen relays the answer resp to the subscriptions/listen id and
// closes it. It reports whether the subscription is to be opened again:
// the stream dropped, or the node ended with its result a subscription
// it had acknowledged with some notification agreed (that result is not
// relayed), and the host has not cancelled it. Any other answer (a
// refusal, an error, or a listen that agreed to nothing and so ended at
// once) goes to the host, and ends it.
func (b *bridge) relayListen(ctx context.Context, resp *http.Response, id json.RawMessage) (again bool) {
	defer func() { _ = resp.Body.Close() }()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != httpapi.ContentTypeEventStream {
		// A JSON-RPC answer (an error, or the result of a listen that
		// agreed to nothing), or a refusal; again if it dropped.
		return b.relayModern(ctx, resp, id)
	}
	agreed := false
	for ev, err := range httpapi.ReadEvents(resp.Body, maxMessage) {
		if err != nil {
			break
		}
		if ev.Data == "" {
			continue
		}
		msg := []byte(ev.Data)
		if answers(msg, id) {
			if agreed && ctx.Err() == nil {
				return true
			}
			b.emit(msg, false)
			return false
		}
		agreed = agreed || agreesTo(msg)
		b.emit(msg, false)
	}
	return ctx.Err() == nil
}

// agreesTo reports whether msg is a notifications/subscriptions/acknowledged
// that agreed to some notification.
func agreesTo(msg []byte) bool {
	var n struct {
		Method string `json:"method"`
		Params struct {
			Notifications map[string]any `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != "notifications/subscriptions/acknowledged" {
		return false
	}
	for _, v := range n.Params.Notifications {
		switch v := v.(type) {
		case bool:
			if v {
				return true
			}
		case []any:
			if len(v) > 0 {
				return true
			}
		}
	}
	return false
}

// cancelModern closes the POST of the request notifications/cancelled msg
// names, if it is one of the stateless era in flight; it reports whether
// it was.
func (b *bridge) cancelModern(msg []byte) bool {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || len(n.Params.RequestID) == 0 {
		return false
	}
	b.mu.Lock()
	cancel := b.inflight[idKey(n.Params.RequestID)]
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return cancel != nil
}

// idKey is a JSON-RPC id in its compact form.
func idKey(id json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, id) != nil {
		return string(id)
	}
	return c.String()
}
