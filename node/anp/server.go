package anp

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TDs gives the parsed TD of a directory entry; own.Things implements it.
type TDs interface {
	TDOf(publisher peer.ID, id string) (*lmosproto.TD, bool)
}

// Publisher publishes an own Thing (own.Things implements it): imports
// publish the ANP agents with it.
type Publisher interface {
	Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error)
}

// Deps are what a Server works with. Identity may be nil (the node has no
// did:wba: no DID document, and descriptions name no DID); the others
// are required.
type Deps struct {
	Directory *directory.Directory
	TDs       TDs
	// Visible is the owner's view of the directory, VisibleTo a DID
	// caller's (own.Things).
	Visible   func(directory.Entry) bool
	VisibleTo func(interact.DIDCaller) func(directory.Entry) bool
	Identity  *Identity
	// Auth checks DID-WBA signed requests; the API's guard uses it.
	Auth *Authenticator
	// Publisher and Client serve imports.
	Publisher Publisher
	Client    *Client
}

// Server serves the ANP documents and imports (see the package
// documentation). It is safe for concurrent use.
type Server struct {
	deps Deps
	log  *slog.Logger
	mux  *http.ServeMux
	view atomic.Uint64 // Refresh calls
	docs *httpapi.DocCache
}

// New returns the Server of deps.
func New(deps Deps, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, log: log, mux: http.NewServeMux(),
		docs: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 1024, MaxBytes: 16 << 20})}
	s.mux.Handle("GET "+PathDescriptions, s.cached(s.serveCollection))
	s.mux.Handle("GET "+PathAgents+"/{publisher}/{id}/ad.json", s.cached(s.serveDescription))
	s.mux.HandleFunc("POST "+PathImports, s.serveImport)
	if deps.Identity != nil {
		s.mux.HandleFunc("GET "+deps.Identity.DocumentPath(), s.serveDIDDocument)
	}
	return s
}

// Patterns returns the ServeMux patterns of the routes behind the API's
// access guard.
func Patterns() []string {
	return []string{PathDescriptions, PathAgents + "/{publisher}/{id}/ad.json", PathImports}
}

// DocumentPath is the path of the node's DID document, "" without a
// did:wba identity. The API serves it to anyone, before its guard: it
// holds the node's public key only.
func (s *Server) DocumentPath() string {
	if s.deps.Identity == nil {
		return ""
	}
	return s.deps.Identity.DocumentPath()
}

// Auth is the Authenticator of DID-WBA signed requests.
func (s *Server) Auth() *Authenticator { return s.deps.Auth }

// Refresh tells the server that what this node may see changed (its group
// memberships): the documents are rendered again.
func (s *Server) Refresh() { s.view.Add(1) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// cached serves render's answers once per revision of the directory and
// of the caller's view, keyed by base URL, path, query and view.
func (s *Server) cached(render http.HandlerFunc) http.Handler {
	return s.docs.Handler(func(r *http.Request) (string, string, bool) {
		_, view := s.visibility(r)
		return view + " " + s.baseURL(r) + r.URL.RequestURI(), s.deps.Directory.Revision() + "/" + strconv.FormatUint(s.view.Load(), 10), true
	}, render)
}

// serveDIDDocument serves the node's DID document.
func (s *Server) serveDIDDocument(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/did+json")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(s.deps.Identity.Document())
}
