package node

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/gateway"
	"github.com/lmosnode/lmosnode/node/groupsvc/groupapi"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The local HTTP API. Every response body is JSON; errors are RFC 9457
// problem details (application/problem+json, a proto.Problem), written by
// package httpapi as on every HTTP surface of the node.

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
	return httpapi.Recover(n.log, guardAPI(n.cfg.APIToken, n.cfg.APICORS, mux))
}

// guardAPI is the API's access control (docs/api.md#access): the bearer
// token when one is configured, else the loopback Host check; and CORS for
// the origins cors allows. CORS answers preflights inside the Host check
// (a rebound host name gets no CORS answer either) but before the token
// check, because browsers send preflights without the Authorization
// header.
func guardAPI(token string, cors httpapi.CORSConfig, next http.Handler) http.Handler {
	if token != "" {
		return httpapi.CORS(cors, httpapi.RequireBearer(token, next))
	}
	return httpapi.LoopbackHostOnly(httpapi.CORS(cors, next))
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
// a slow or stuck client from holding connections.
func newAPIServer(n *Node) *http.Server {
	return &http.Server{
		Handler:           apiHandler(n),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
	}
}
