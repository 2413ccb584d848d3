package node

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/console"
	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The local HTTP API. Every response body is JSON; errors are RFC 9457
// problem details (application/problem+json, a proto.Problem), written by
// package httpapi as on every HTTP surface of the node.

// apiHandler builds the API's routes for n.
func apiHandler(n *Node) http.Handler {
	mux := http.NewServeMux()
	httpapi.HandleMethods(mux, "/api/v1/node", map[string]http.HandlerFunc{http.MethodGet: n.handleNode})
	// The trust list (package trustapi).
	for _, path := range trustapi.Paths() {
		mux.Handle(path, n.trustAPI)
	}
	// Signed agent groups (package groupapi).
	for _, pattern := range groupapi.Patterns() {
		mux.Handle(pattern, n.groupAPI)
	}
	// The WoT HTTP binding of every Thing the node knows (package gateway).
	for _, pattern := range gateway.Patterns() {
		mux.Handle(pattern, n.gateway)
	}
	// Every lmos:Agent as an A2A agent, and A2A imports (package a2abridge).
	for _, pattern := range a2abridge.Patterns() {
		mux.Handle(pattern, n.a2a)
	}
	// Everything else is the WoT Thing Description Directory API and the
	// node-admin routes of package tdd (/things, /events, /api/v1/things…).
	// MCP's Streamable HTTP transport (package mcpbridge).
	mux.Handle(mcpPath, n.mcp.Handler())
	imports := n.mcpImports.Handler()
	for _, pattern := range mcpbridge.ImportPatterns() {
		mux.Handle(pattern, imports)
	}
	// The web console's routes (package console); its pages are served
	// in front of the access guard, below.
	consoleRoutes := n.console.Routes(mux)
	for _, pattern := range console.Patterns() {
		mux.Handle(pattern, consoleRoutes)
	}
	mux.Handle(wsPath, n.ws)
	mux.Handle(wsAgentPath, n.wsAgent)
	mux.Handle("/", n.tdd)
	// Metrics and pprof, under the API's access rules (observe.go).
	n.observeRoutes(mux)
	lim := n.cfg.APILimits.WithDefaults()
	bodies := httpapi.Limits{BodyTimeout: time.Duration(lim.BodyTimeout), MaxBody: lim.MaxBodyBytes}
	// Outermost: every request counted (refusals included) and, with
	// tracing on, traced; the probes answer before the access guard.
	guarded := guardAPI(n.apiToken, n.tokenForAll, n.cfg.APICORS, mux)
	return httpapi.Observe(n.metrics.APIRequest, n.traceAPI(
		httpapi.Limit(bodies, httpapi.Recover(n.log, n.probes(withConsole(n.tokenForAll, n.console.Assets(), guarded))))))
}

// withConsole serves the web console's pages (/ and /console/…) before
// guarded: they hold nothing of the node, and where the token is needed
// the page must load to ask for it. When reads are open to local clients
// (all false) the loopback Host check still applies to them.
func withConsole(all bool, assets, guarded http.Handler) http.Handler {
	if !all {
		assets = httpapi.LoopbackHostOnly(assets)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if console.IsAsset(r) {
			assets.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// guardAPI is the API's access control (docs/api.md#access): with all,
// the bearer token for every request; else the loopback Host check, and
// the token for the requests that act as the node (adminRequest, by the
// pattern mux routes them to); and CORS for the origins cors allows. CORS
// answers preflights inside the Host check (a rebound host name gets no
// CORS answer either) but before the token check, because browsers send
// preflights without the Authorization header.
func guardAPI(token string, all bool, cors httpapi.CORSConfig, mux *http.ServeMux) http.Handler {
	routed := httpapi.Routed(mux)
	if all {
		return httpapi.CORS(cors, httpapi.RequireBearer(token, routed))
	}
	admin := httpapi.RequireBearer(token, routed)
	return httpapi.LoopbackHostOnly(httpapi.CORS(cors, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); adminRequest(r, pattern) {
			admin.ServeHTTP(w, r)
			return
		}
		routed.ServeHTTP(w, r)
	})))
}

func (n *Node) handleNode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Info())
}

// writeJSON and writeProblem keep the API's handlers short.
func writeJSON(w http.ResponseWriter, status int, v any) {
	httpapi.WriteJSON(w, status, v)
}

func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: status, Detail: detail})
}

// newAPIServer returns the http.Server for the API, with timeouts that keep
// a slow or stuck client from holding connections; the body deadline and
// size cap are httpapi.Limit's (apiHandler), the cap per client address
// apiListener's. No WriteTimeout: it would cut event streams, whose
// writes have their own deadlines (httpapi.StreamConfig.WriteTimeout).
func newAPIServer(n *Node) *http.Server {
	lim := n.cfg.APILimits.WithDefaults()
	return &http.Server{
		Handler:           apiHandler(n),
		ReadHeaderTimeout: time.Duration(lim.ReadHeaderTimeout),
		IdleTimeout:       time.Duration(lim.IdleTimeout),
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}
}

// apiListener wraps the API's listener with the cap on connections per
// client address.
func apiListener(n *Node, ln net.Listener) *httpapi.Listener {
	lim := n.cfg.APILimits.WithDefaults()
	return httpapi.LimitListener(ln, httpapi.ConnLimits{MaxPerClient: lim.MaxConnsPerClient, Loopback: lim.LimitLoopback})
}
