// Package httpapi is what every HTTP surface of the node shares: the
// directory API (node/tdd), the WoT HTTP binding (node/gateway), the
// WebSocket endpoints' plain HTTP answers (node/wsgateway), the groups API
// and the root API of package node, and their clients (the CLI, the HTTP
// backend of node/interact). Surfaces still to come (MCP over streamable
// HTTP, the web console) build on it too.
//
// # Problems
//
// Every error response is an RFC 9457 problem (application/problem+json)
// whose body is a *proto.Problem, the one problem type of the code base:
// type, title, status, detail, instance, and the extension members
// validationErrors (WoT Discovery §7.3.2.1: the JSON pointer of each
// member at fault in the request body) and candidates (300 Multiple
// Choices: each publisher of an ambiguous Thing id). WriteProblem writes
// one from any error: the *proto.Problem it is or wraps, otherwise a 500
// with the error's text as detail. Title defaults to the status text,
// instance to the request path; "about:blank" as type is left out, as
// RFC 9457 allows. Every problem response carries Cache-Control: no-store
// and X-Content-Type-Options: nosniff. Recover turns a panicking handler
// into a 500 problem; AsProblems turns the plain-text errors of a library
// handler (http.FileServer, the WebSocket handshake, pprof) into
// problems. ResponseProblem is the client side: the problem a
// response describes. testdata/*.http holds the exact responses.
//
// # JSON and content negotiation
//
// WriteJSON writes a JSON body. Negotiate picks the media type of an
// answer from the Accept header (parsed with munnerz/goautoneg): the
// offer with the highest quality, the first one on a tie; a type with a
// structured syntax suffix (application/td+json) counts as its base type
// (application/json). ReadBody, the one body reader of the routes, takes
// JSON text (IsJSONType by Content-Type) in UTF-8 only (CheckJSONCharset:
// 415) and as sent (CheckJSONText: invalid UTF-8 or a lone surrogate
// escape, which encoding/json would rewrite to U+FFFD, is a 400 naming
// the member).
//
// # Server-sent events
//
// A Stream is the one writer of text/event-stream responses: it sends the
// headers (Content-Type text/event-stream, Cache-Control no-cache,
// X-Accel-Buffering no, so that a reverse proxy does not buffer), then
// events (id, event and data fields; data with line breaks becomes
// several data lines; the first also carries the retry field, never sent
// in a block of its own, which naive readers take for an event without
// type or id), each under a write deadline
// (http.ResponseController) and flushed at once; KeepAlive ticks the
// handler to send a comment line on an idle stream, so that proxies keep
// the connection. LastEventID reads the Last-Event-ID header a client
// resumes with. ReadEvents is the one reader, built on the parser of
// tmaxmax/go-sse: it joins multi-line data and skips comments and
// blocks without data or type (a retry alone, as older nodes sent).
//
// # Access
//
// RequireBearer (the bearer token), LoopbackHostOnly (DNS-rebinding
// protection of a loopback API without a token) and CORS (the pages of
// the origins a CORSConfig allows, off by default; preflights are
// answered before the token check, since browsers send them without
// Authorization) guard every HTTP surface; BrowserConsent refuses the
// requests that act or call from web pages of other origins, and the
// bodies a page sends without a preflight (CSRF). docs/api.md#access has
// the rules and the order the node applies them in.
//
// # Limits
//
// Limit bounds request bodies: a Content-Length above the cap is 413 at
// once, a longer chunked body fails its read (ReadBody, the one body
// reader of the routes, answers 413), and a body must arrive within a
// read deadline (408, the connection is then closed). Requests without a
// body — event streams, WebSocket upgrades — have no read deadline;
// http.Server lifts it once a body has been read; StreamBody lifts it for
// a handler that reads its body as a stream. LimitListener caps the open
// connections per client address (loopback exempt unless configured) and
// lets a half-closed connection (after 431 or 413) drain what the client
// still sends before it closes, so that the client reads the answer
// instead of a reset. docs/api.md#limits has the node's defaults.
//
// # Documents rendered from remote data
//
// DocCache serves documents the node renders from what it holds, most of
// it other nodes' Things (the A2A agent cards, the directory's TD): once
// per revision of that data (the directory's Revision) instead of once
// per request, one render at a time with concurrent readers waiting for
// it, each document kept with a strong ETag (a hash of its bytes) and
// Cache-Control: no-cache, and 304 Not Modified to an If-None-Match that
// names it. docs/api.md#caching has the documents and their budgets.
//
// Observe reports every answered request (method, route pattern, status,
// duration) to a function, the node's metrics; Routed, around each
// ServeMux, tells it the pattern that matched and names the request's
// trace span after it.
//
// Nothing here keeps state between requests, except a Listener's count of
// connections and a DocCache's documents; every function is safe for
// concurrent use, a Stream belongs to its handler.
package httpapi
