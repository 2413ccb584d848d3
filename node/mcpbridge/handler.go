package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The two revisions of MCP's Streamable HTTP transport the endpoint
// serves. 2025-11-25 (and the revisions before it back to 2025-03-26) is
// stateful: initialize opens a session (Mcp-Session-Id), GET opens its
// standalone stream, DELETE ends it. 2026-07-28 is stateless: every POST
// carries the protocol version in its MCP-Protocol-Version header and its
// params' _meta, server/discover replaces initialize and
// subscriptions/listen the GET stream. The SDK serves the first with a
// stateful StreamableHTTPHandler and the second only with a stateless
// one, so the endpoint routes each request to one of the two handlers
// (over the one mcp.Server) by its revision.
const (
	// RevisionStateless is the first protocol revision of the stateless
	// era.
	RevisionStateless = "2026-07-28"
	// RevisionSessions is the newest protocol revision of the session era.
	RevisionSessions = "2025-11-25"

	headerProtocolVersion = "MCP-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	metaProtocolVersion   = "io.modelcontextprotocol/protocolVersion"
)

// endpoint is the /mcp handler: routing (route) and plain-text errors
// answered as problems (problemErrors).
type endpoint struct {
	stateful, stateless http.Handler
	// server ends when the Server closes, and every request with it.
	// Closing the SDK's sessions is not enough: a subscriptions/listen
	// whose session closed before its handler started waits on its
	// request, and the session's Close on it, until the client goes.
	server context.Context
}

func (e endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(e.server, cancel)()
	r = r.WithContext(ctx)
	h, p := e.route(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	problemErrors(h, w, r)
}

// route picks the handler of r's revision: a version header that sorts
// at or after 2026-07-28 (that revision, a later one, or an unknown one
// such as "v9", which the stateless handler answers with
// UnsupportedProtocolVersionError) goes to the stateless handler, as does a POST without a header nor a session
// whose params' _meta names a protocol version (the stateless handler
// rejects it as a HeaderMismatch, which is what the 2026-07-28 transport
// asks); everything else (initialize, a session's requests, GET, DELETE)
// to the stateful one. A POST's body is read here, through the node's
// one body reader (httpapi.ReadBody: bounded, JSON text as sent — not
// UTF-8, a lone surrogate or another charset is refused rather than
// decoded to U+FFFD by the SDK); reading it fails with a problem.
func (e endpoint) route(w http.ResponseWriter, r *http.Request) (http.Handler, *lmosproto.Problem) {
	var body []byte
	if r.Method == http.MethodPost {
		b, p := httpapi.ReadBody(w, r, mcp.DefaultMaxRequestBodyBytes)
		if p != nil {
			return nil, p
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" {
		if v >= RevisionStateless {
			return e.stateless, nil
		}
		return e.stateful, nil
	}
	if r.Method != http.MethodPost || r.Header.Get(headerSessionID) != "" {
		return e.stateful, nil
	}
	var msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Params.Meta[metaProtocolVersion] != nil {
		return e.stateless, nil
	}
	return e.stateful, nil
}

// problemErrors serves r with h, answering the error statuses h answers
// in plain text (the SDK's transport errors: a wrong Content-Type or
// Accept, an unknown session, a method the endpoint does not take) as
// RFC 9457 problems with the text as detail. JSON-RPC errors (an
// application/json body) and everything else pass unchanged.
func problemErrors(h http.Handler, w http.ResponseWriter, r *http.Request) {
	pw := &problemWriter{ResponseWriter: w}
	h.ServeHTTP(pw, r)
	if pw.status == 0 {
		return
	}
	detail, _, _ := strings.Cut(strings.TrimSpace(pw.body.String()), "\n")
	httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: pw.status, Detail: detail})
}

// problemWriter holds back a plain-text error response (status set) and
// passes any other through, flushes included.
type problemWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	wrote  bool
}

func (pw *problemWriter) WriteHeader(code int) {
	if pw.wrote || pw.status != 0 {
		return
	}
	if mt, _, _ := mime.ParseMediaType(pw.Header().Get("Content-Type")); code >= 400 && mt == "text/plain" {
		pw.status = code
		return
	}
	pw.wrote = true
	pw.ResponseWriter.WriteHeader(code)
}

func (pw *problemWriter) Write(b []byte) (int, error) {
	if !pw.wrote && pw.status == 0 {
		pw.WriteHeader(http.StatusOK)
	}
	if pw.status != 0 {
		return pw.body.Write(b)
	}
	return pw.ResponseWriter.Write(b)
}

// Flush flushes a response that is passed through.
func (pw *problemWriter) Flush() {
	if pw.status == 0 {
		if !pw.wrote {
			pw.WriteHeader(http.StatusOK)
		}
		http.NewResponseController(pw.ResponseWriter).Flush() //nolint:errcheck // as http.Flusher: nothing to report to
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (pw *problemWriter) Unwrap() http.ResponseWriter { return pw.ResponseWriter }

// cacheHints sets the caching hints of every cacheable result (MCP
// 2026-07-28, server/utilities/caching). The result is "private", since
// what a node lists and reads depends on the groups it is in and is for
// the callers its API lets in, not for a shared cache. It is fresh for a
// tenth of the time since the tools last changed, at most CacheTTL: the
// heuristic freshness of HTTP (RFC 9111, section 4.2.2), for a list that
// changes in bursts while the node learns Things. list_changed alone
// does not keep a client's cache right during a burst: a list sent just
// before a change can reach a client after the notification that voids
// it (over Streamable HTTP the two travel on different streams), and
// such a client (the Go SDK's v1.8.0) then keeps the old list for the
// whole ttlMs.
func (s *Server) cacheHints(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	age := time.Since(time.Unix(0, s.changedAt.Load()))
	c.TTLMs = int(min(s.cfg.CacheTTL, age/10).Milliseconds())
	c.CacheScope = "private"
}
