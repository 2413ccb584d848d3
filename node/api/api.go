package api

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/agentsjson"
	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/aitp"
	"github.com/lmosnode/lmosnode/node/anp"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/console"
	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/mcpbridge"
	"github.com/lmosnode/lmosnode/node/metrics"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
)

// Access to the API (docs/api.md#access). The node always has a token:
// Config.APIToken (or $LMOS_API_TOKEN) when set, else the one Init wrote to
// <home>/api-token (mode 0600). Requests that act as the node (AdminRequest:
// publish, delete, group administration, connect, trust changes, agent
// registration on /ws/agent, the profiler) must carry "Authorization: Bearer <token>"
// (httpapi.RequireBearer) on every address. Reads and invocations need it
// too with APIAuth.RequireTokenFor "all" (the default when the API is not on
// loopback or apiToken is set); with "admin" (the default on loopback
// otherwise) they are open to local clients, and the loopback Host check
// (httpapi.LoopbackHostOnly) keeps DNS-rebound host names out. On every
// route, no request but GET, HEAD and OPTIONS from a web page of an origin
// apiCORS does not allow, nor with a body a page sends without a preflight
// (httpapi.BrowserConsent). Clients
// send the token with httpapi.BearerClient.

// Paths of the API's own routes and of the surfaces mounted at one path.
const (
	// PathNode answers NodeInfo.
	PathNode = "/api/v1/node"
	// PathMCP is MCP's Streamable HTTP transport (docs/bridges.md).
	PathMCP = "/mcp"
	// PathWS is where consumers speak lmosprotocol to any Thing the node
	// knows.
	PathWS = "/ws"
	// PathWSAgent is where agent processes connect to register Things and
	// answer their interactions.
	PathWSAgent = "/ws/agent"
	// The probes (no credentials), metrics and pprof.
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
	PathMetrics = "/metrics"
	PathPprof   = "/debug/pprof/"
)

// Deps are the surfaces the API mounts and what its own routes report.
// Every field is required.
type Deps struct {
	// Info answers GET /api/v1/node, Ready GET /readyz.
	Info  func() NodeInfo
	Ready func() Readiness
	// TDD is the WoT directory API and the node-admin routes of package
	// tdd (/things, /events, /api/v1/things…): everything no other
	// surface routes.
	TDD http.Handler
	// Gateway is the WoT HTTP binding (gateway.Patterns).
	Gateway http.Handler
	// Groups is the groups API (groupapi.Patterns), Trust the trust
	// list's (trustapi.Paths).
	Groups, Trust http.Handler
	// A2A is the A2A bridge (a2abridge.Patterns).
	A2A http.Handler
	// Agora is the Agora server (agora.Patterns), AITP the AITP threads
	// endpoints (aitp.Patterns).
	Agora, AITP http.Handler
	// AgentsJSON is the agents.json export and import
	// (agentsjson.Patterns).
	AgentsJSON http.Handler
	// MCP is MCP's Streamable HTTP endpoint, MCPImports the MCP import
	// routes (mcpbridge.ImportPatterns).
	MCP, MCPImports http.Handler
	// AICatalog is the AI Catalog, its ARD search and import
	// (aicatalog.Patterns); ServerCard the MCP Server Card
	// (mcpbridge.PathServerCard, PathServerCardMCP).
	AICatalog, ServerCard http.Handler
	// ANP serves the ANP documents and imports (anp.Patterns), the
	// node's DID document before the guard, and checks DID-WBA signed
	// requests (docs/identity.md#anp).
	ANP *anp.Server
	// WS and WSAgent are the WebSocket gateways of consumers and agents.
	WS, WSAgent http.Handler
	// Console is the web console: its pages before the access guard,
	// its routes behind it.
	Console *console.Console
	// Metrics counts every request and serves /metrics.
	Metrics *metrics.Metrics
	// Log takes what a handler's panic and the server's errors leave.
	Log *slog.Logger
	// Tracing, if not nil, traces every request but the probes and
	// scrapes (OpenTelemetry).
	Tracing trace.TracerProvider
}

// Config is the API's access rules and limits.
type Config struct {
	// Token is the API's bearer token; TokenForAll whether every request
	// must carry it (else only those that act as the node: AdminRequest).
	Token       string
	TokenForAll bool
	// CORS lets the pages of the origins it lists call the API.
	CORS httpapi.CORSConfig
	// Limits bounds what one client may hold of the API.
	Limits config.APILimits
	// Pprof serves Go's profiler at /debug/pprof/, behind the token
	// (AdminRequest).
	Pprof bool
}

// Handler builds the API: every surface's routes on one mux, behind the
// access guard (guardAPI), with the console's pages and the probes in
// front of it and, outermost, the request limits, metrics and tracing.
func Handler(deps Deps, cfg Config) http.Handler {
	mux := http.NewServeMux()
	httpapi.HandleMethods(mux, PathNode, map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, _ *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, deps.Info())
	}})
	mount := func(h http.Handler, patterns ...string) {
		for _, p := range patterns {
			mux.Handle(p, h)
		}
	}
	mount(deps.Trust, trustapi.Paths()...)
	mount(deps.Groups, groupapi.Patterns()...)
	mount(deps.Gateway, gateway.Patterns()...)
	mount(deps.A2A, a2abridge.Patterns()...)
	mount(deps.Agora, agora.Patterns()...)
	mount(deps.AITP, aitp.Patterns()...)
	mount(deps.AgentsJSON, agentsjson.Patterns()...)
	mount(deps.MCP, PathMCP)
	mount(deps.MCPImports, mcpbridge.ImportPatterns()...)
	mount(deps.AICatalog, aicatalog.Patterns()...)
	mount(deps.ServerCard, "GET "+mcpbridge.PathServerCard, "GET "+mcpbridge.PathServerCardMCP)
	mount(deps.ANP, anp.Patterns()...)
	// The console's routes read the mux they are on (its snapshot).
	mount(deps.Console.Routes(mux), console.Patterns()...)
	mount(deps.WS, PathWS)
	mount(deps.WSAgent, PathWSAgent)
	mount(deps.TDD, "/")
	observeRoutes(mux, deps.Metrics.Handler(), cfg.Pprof)
	lim := cfg.Limits.WithDefaults()
	bodies := httpapi.Limits{BodyTimeout: time.Duration(lim.BodyTimeout), MaxBody: lim.MaxBodyBytes}
	// Outermost: every request counted (refusals included) and, with
	// tracing on, traced; the probes answer before the access guard.
	guarded := guardAPI(cfg.Token, cfg.TokenForAll, cfg.CORS, mux, deps.ANP.Auth())
	public := publicDocs(deps.ANP, withConsole(cfg.TokenForAll, deps.Console.Assets(), guarded))
	return httpapi.Observe(deps.Metrics.APIRequest, traceAPI(deps.Tracing,
		httpapi.Limit(bodies, httpapi.Recover(deps.Log, probes(deps.Ready, public)))))
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

// publicDocs serves the node's did:wba DID document to anyone, before
// the guard (it holds the node's public key only, and a resolver sends no
// token), and everything else through next.
func publicDocs(s *anp.Server, next http.Handler) http.Handler {
	path := s.DocumentPath()
	if path == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			s.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardAPI is the API's access control (docs/api.md#access): with all,
// the bearer token for every request; else the loopback Host check, and
// the token for the requests that act as the node (AdminRequest, by the
// pattern mux routes them to); and CORS for the origins cors allows. CORS
// answers preflights inside the Host check (a rebound host name gets no
// CORS answer either) but before the token check, because browsers send
// preflights without the Authorization header. Innermost, on every route,
// the browser's consent (httpapi.BrowserConsent): no request that acts or
// calls from a web page of an origin cors does not allow, nor with a body
// a page sends without a preflight. It runs after the token check, so
// that a request without the token learns nothing but 401.
//
// On the routes that call Things (but /mcp) and ANP's documents
// (didRoute), a
// request signed per ANP-02, or with the access token such a request
// got, is checked by did instead (anp.Authenticator, DID-WBA), with no
// token and on any Host: it is served as its DID's caller, whom the
// owner's access decision sees; the token's 401 on those routes carries
// the DIDWba challenge too.
func guardAPI(token string, all bool, cors httpapi.CORSConfig, mux *http.ServeMux, did *anp.Authenticator) http.Handler {
	routed := httpapi.BrowserConsent(cors, httpapi.Routed(mux))
	byDID := httpapi.CORS(cors, did.Authenticate(routed))
	challenge := func(h http.Header, r *http.Request) {
		if _, pattern := mux.Handler(r); didRoute(pattern) {
			did.Challenge(h, r, "invalid_request", "Sign the request (DID-WBA, ANP-02) or send the API token.")
		}
	}
	byToken := guardToken(token, all, cors, mux, routed, challenge)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); didRoute(pattern) && did.Carries(r) {
			byDID.ServeHTTP(w, r)
			return
		}
		byToken.ServeHTTP(w, r)
	})
}

// didRoute reports whether pattern accepts DID-WBA: the invocation
// routes but MCP's and ANP's documents. MCP's sessions outlive the
// request that opens them (the SDK runs later calls in the session's
// context), so a signature could not name the caller of each call there.
func didRoute(pattern string) bool {
	return (invocation(pattern) && pattern != PathMCP) || (pattern != anp.PathImports && slices.Contains(anp.Patterns(), pattern))
}

// guardToken is guardAPI's check of the bearer token.
func guardToken(token string, all bool, cors httpapi.CORSConfig, mux *http.ServeMux, routed http.Handler, challenge func(http.Header, *http.Request)) http.Handler {
	if all {
		return httpapi.CORS(cors, httpapi.RequireBearerOr(token, challenge, routed))
	}
	admin := httpapi.RequireBearer(token, routed)
	return httpapi.LoopbackHostOnly(httpapi.CORS(cors, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); AdminRequest(r, pattern) {
			admin.ServeHTTP(w, r)
			return
		}
		routed.ServeHTTP(w, r)
	})))
}

// AdminRequest reports whether r acts as the node and so always needs the
// token: every method but GET, HEAD and OPTIONS, except the invocations
// of the WoT HTTP binding (writeProperty, invokeAction, cancelAction) and
// of MCP (/mcp), of the A2A bridge (their calls; an import acts as the
// node) and of the Agora and AITP endpoints, and ARD's search (a POST that
// reads); the agents' WebSocket (an agent registers Things as the node's
// own); and Go's profiler (its command line, goroutine stacks and
// profiles are the process's, not the directory's). pattern is the API
// mux's pattern for r.
func AdminRequest(r *http.Request, pattern string) bool {
	if pattern == PathWSAgent || strings.HasPrefix(pattern, PathPprof) {
		return true
	}
	if pattern == aicatalog.PathSearch { // ARD's search is a POST that reads
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !invocation(pattern)
}

// invocation reports whether pattern is a route whose writes call Things
// (the WoT HTTP binding, MCP's Streamable HTTP endpoint, the A2A bridge's
// JSON-RPC endpoints) rather than act as the node.
func invocation(pattern string) bool {
	if pattern == PathMCP || slices.Contains(gateway.Patterns(), pattern) ||
		slices.Contains(agora.Patterns(), pattern) || slices.Contains(aitp.Patterns(), pattern) {
		return true
	}
	return pattern != a2abridge.PathImports && slices.Contains(a2abridge.Patterns(), pattern)
}

// traceAPI wraps the API's handler in OpenTelemetry's HTTP server
// instrumentation when tracing is on: a span per request, continuing the
// caller's traceparent. Probes and scrapes get none.
func traceAPI(tp trace.TracerProvider, h http.Handler) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "lmos api",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithMeterProvider(noopmetric.NewMeterProvider()),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case PathHealthz, PathReadyz, PathMetrics:
				return false
			}
			return true
		}))
}

// Readiness is the body of GET /readyz.
type Readiness struct {
	// Ready is true when every check passed.
	Ready bool `json:"ready"`
	// Checks maps each check (datastore, host, bootstrap, api) to "ok" or
	// to what is missing.
	Checks map[string]string `json:"checks"`
}

// observeRoutes adds /metrics and, with withPprof, pprof to the
// guarded API mux.
func observeRoutes(mux *http.ServeMux, metrics http.Handler, withPprof bool) {
	// Both answer their errors in plain text: AsProblems makes them problems.
	mux.Handle("GET "+PathMetrics, httpapi.AsProblems(metrics))
	if !withPprof {
		return
	}
	mux.Handle(PathPprof, httpapi.AsProblems(http.HandlerFunc(pprof.Index)))
	mux.Handle(PathPprof+"cmdline", httpapi.AsProblems(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle(PathPprof+"profile", httpapi.AsProblems(http.HandlerFunc(pprof.Profile)))
	mux.Handle(PathPprof+"symbol", httpapi.AsProblems(http.HandlerFunc(pprof.Symbol)))
	mux.Handle(PathPprof+"trace", httpapi.AsProblems(http.HandlerFunc(pprof.Trace)))
}

// probes serves /healthz and /readyz to anyone (no token, any Host: a
// Kubernetes probe sends neither) and everything else through guarded.
func probes(ready func() Readiness, guarded http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		// Liveness: the process serves HTTP.
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, _ *http.Request) {
		// Readiness: 200 when ready, else 503, with the checks either way.
		rd := ready()
		status := http.StatusOK
		if !rd.Ready {
			status = http.StatusServiceUnavailable
		}
		httpapi.WriteJSON(w, status, rd)
	})
	mux.Handle("/", guarded)
	return httpapi.Routed(mux)
}

// NewServer returns the http.Server for the API h, with timeouts that keep
// a slow or stuck client from holding connections; the body deadline and
// size cap are httpapi.Limit's (Handler), the cap per client address
// Listener's. No WriteTimeout: it would cut event streams, whose
// writes have their own deadlines (httpapi.StreamConfig.WriteTimeout).
func NewServer(h http.Handler, limits config.APILimits, log *slog.Logger) *http.Server {
	lim := limits.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(lim.ReadHeaderTimeout),
		IdleTimeout:       time.Duration(lim.IdleTimeout),
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Listener wraps the API's listener with the cap on connections per
// client address.
func Listener(ln net.Listener, limits config.APILimits) *httpapi.Listener {
	lim := limits.WithDefaults()
	return httpapi.LimitListener(ln, httpapi.ConnLimits{MaxPerClient: lim.MaxConnsPerClient, Loopback: lim.LimitLoopback})
}
