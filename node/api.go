package node

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
)

// The local HTTP API. Every response body is JSON; errors are RFC 7807
// problem details (application/problem+json).

// NodeInfo is the body of GET /api/v1/node.
type NodeInfo struct {
	// PeerID is the node's libp2p peer ID.
	PeerID string `json:"peerID"`
	// DIDKey is the did:key of the same Ed25519 key.
	DIDKey string `json:"didKey"`
	// Addrs are the node's listen multiaddrs, each ending in /p2p/<PeerID>.
	Addrs []string `json:"addrs"`
	// Version is the lmosnode version (see Version).
	Version string `json:"version"`
	// APIURL is the base URL of this API.
	APIURL string `json:"apiURL"`
}

// Problem is an RFC 7807 problem details object, the body of every error
// response of the API. It implements error, so API clients return it.
type Problem struct {
	// Type is a URI naming the kind of problem; "about:blank" (omitted)
	// means the HTTP status says it all.
	Type string `json:"type,omitempty"`
	// Title is a short summary of the kind of problem.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence.
	Detail string `json:"detail,omitempty"`
	// Instance is the request path the problem occurred on.
	Instance string `json:"instance,omitempty"`
}

// Error returns "status title: detail".
func (p *Problem) Error() string {
	s := fmt.Sprintf("%d %s", p.Status, p.Title)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

const (
	contentTypeJSON    = "application/json"
	contentTypeProblem = "application/problem+json"
)

// apiHandler builds the API's routes for n.
func apiHandler(n *Node) http.Handler {
	mux := http.NewServeMux()
	routes := map[string]map[string]http.HandlerFunc{
		"/api/v1/node": {http.MethodGet: n.handleNode},
	}
	for path, methods := range routes {
		allowed := make([]string, 0, len(methods))
		for method, h := range methods {
			mux.HandleFunc(method+" "+path, h)
			allowed = append(allowed, method)
		}
		slices.Sort(allowed)
		allow := strings.Join(allowed, ", ")
		// Any other method on a known path.
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeProblem(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; allowed: %s", r.Method, allow))
		})
	}
	// Signed agent groups (package groupapi).
	for _, pattern := range groupapi.Patterns() {
		mux.Handle(pattern, n.groupAPI)
	}
	// The WoT HTTP binding of every Thing the node knows (package gateway).
	for _, pattern := range gateway.Patterns() {
		mux.Handle(pattern, n.gateway)
	}
	// Everything else is the WoT Thing Description Directory API and the
	// node-admin routes of package tdd (/things, /events, /api/v1/things…).
	mux.Handle(wsPath, n.ws)
	mux.Handle(wsAgentPath, n.wsAgent)
	mux.Handle("/", n.tdd)
	return recoverProblem(n.log, guardAPI(n.cfg.APIToken, mux))
}

// guardAPI is the API's access control (see access.go): the bearer token
// when one is configured, else the loopback Host check.
func guardAPI(token string, next http.Handler) http.Handler {
	if token != "" {
		return requireBearer(token, next)
	}
	return loopbackHostOnly(next)
}

// loopbackHostOnly refuses requests whose Host header is not a loopback
// address or localhost. It guards an API on loopback without a token
// (Validate allows no other tokenless address), which a web page could
// still reach through DNS rebinding (evil.example resolving to 127.0.0.1);
// such requests carry the page's host name and are refused.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		ip, err := netip.ParseAddr(host)
		if host != "localhost" && (err != nil || !ip.IsLoopback()) {
			writeProblem(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not a loopback address", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (n *Node) handleNode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Info())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	p := Problem{Title: http.StatusText(status), Status: status, Detail: detail, Instance: r.URL.Path}
	w.Header().Set("Content-Type", contentTypeProblem)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p) // the client went away; nothing to do
}

// recoverProblem turns a panicking handler into a 500 problem instead of a
// dropped connection, and logs it.
func recoverProblem(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("api handler panicked", "path", r.URL.Path, "panic", v)
				writeProblem(w, r, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// newAPIServer returns the http.Server for the API, with timeouts that keep
// a slow or stuck client from holding connections.
func newAPIServer(n *Node) *http.Server {
	return &http.Server{
		Handler:           apiHandler(n),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}
}
