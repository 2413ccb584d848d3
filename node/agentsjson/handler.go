package agentsjson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The routes of the Handler.
const (
	// PathWellKnown serves the node's agents.json.
	PathWellKnown = "/.well-known/agents.json"
	// PathSources prefixes the OpenAPI document of each source:
	// PathSources/{publisher}/{id}/openapi.json.
	PathSources = "/agentsjson/sources"
	// PathImports is where `lmosnode import agents-json` posts a URL.
	PathImports = "/api/v1/agentsjson/imports"
)

// Defaults of a Config.
const (
	// DefaultMaxThings bounds the Things the node's agents.json lists.
	DefaultMaxThings = 256
	// DefaultMaxBytes bounds the node's agents.json; each source's
	// OpenAPI document is embedded in it and counts.
	DefaultMaxBytes = 1 << 20
)

// Config configures a Handler. The zero value of every field selects its
// default.
type Config struct {
	// MaxThings: see DefaultMaxThings.
	MaxThings int
	// MaxBytes: see DefaultMaxBytes.
	MaxBytes int
}

func (c Config) withDefaults() Config {
	if c.MaxThings == 0 {
		c.MaxThings = DefaultMaxThings
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	var errs []error
	if c.MaxThings < 0 {
		errs = append(errs, fmt.Errorf("agentsjson: MaxThings %d is negative", c.MaxThings))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("agentsjson: MaxBytes %d is negative", c.MaxBytes))
	}
	return errors.Join(errs...)
}

// Publisher publishes an own Thing (own.Things implements it): an import
// publishes its Tools with it.
type Publisher interface {
	Publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error)
}

// Deps are what a Handler works with. All are required.
type Deps struct {
	// Directory lists the Things the node knows.
	Directory *directory.Directory
	// Visible hides the Things this node may not see (group-scoped Things
	// of groups it is not a member of), as in the directory's listing.
	Visible func(directory.Entry) bool
	// ConsumerView is the consumer view of a Thing for the consumer of a
	// request: its TD with forms pointing at this node
	// (gateway.Handler.ConsumerViewOf, as the directory serves it).
	ConsumerView func(r *http.Request, e directory.Entry) ([]byte, error)
	// Self is this node's peer ID: its own Things are listed first.
	Self peer.ID
	// Publisher publishes imported Tools.
	Publisher Publisher
	// Client reads imported documents and calls their APIs.
	Client *Client
}

// Handler serves the node's agents.json, its sources' OpenAPI documents
// and the import route (see the package documentation). It is safe for
// concurrent use.
type Handler struct {
	deps    Deps
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	view    atomic.Uint64 // Refresh calls
	docs    *httpapi.DocCache
	sources *httpapi.DocCache
}

// New returns the Handler of deps.
func New(deps Deps, cfg Config, opts ...Option) (*Handler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case deps.Directory == nil:
		return nil, errors.New("agentsjson: Deps.Directory is nil")
	case deps.Visible == nil:
		return nil, errors.New("agentsjson: Deps.Visible is nil")
	case deps.ConsumerView == nil:
		return nil, errors.New("agentsjson: Deps.ConsumerView is nil")
	case deps.Self == "":
		return nil, errors.New("agentsjson: Deps.Self is empty")
	case deps.Publisher == nil:
		return nil, errors.New("agentsjson: Deps.Publisher is nil")
	case deps.Client == nil:
		return nil, errors.New("agentsjson: Deps.Client is nil")
	}
	o := applyOptions(opts)
	h := &Handler{deps: deps, cfg: cfg, log: o.log, mux: http.NewServeMux(),
		docs:    httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 8, MaxBytes: 8 * cfg.MaxBytes}),
		sources: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 1024, MaxBytes: 16 << 20}),
	}
	h.mux.Handle("GET "+PathWellKnown, h.cached(h.docs, http.HandlerFunc(h.renderDoc)))
	h.mux.Handle("GET "+PathSources+"/{publisher}/{id}/openapi.json", h.cached(h.sources, http.HandlerFunc(h.renderSource)))
	h.mux.HandleFunc("POST "+PathImports, h.serveImport)
	return h, nil
}

// Patterns are the routes of a Handler, for the API's mux.
func Patterns() []string {
	return []string{"GET " + PathWellKnown, "GET " + PathSources + "/{publisher}/{id}/openapi.json", "POST " + PathImports}
}

// ServeHTTP serves the Handler's routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Refresh tells the handler that what this node may see changed (its
// group memberships): the documents are rendered again.
func (h *Handler) Refresh() { h.view.Add(1) }

// cached serves render's answers from docs, once per revision of the
// directory and of what this node may see, keyed by the base URL the
// request reached the API by and its path.
func (h *Handler) cached(docs *httpapi.DocCache, render http.Handler) http.Handler {
	return docs.Handler(func(r *http.Request) (string, string, bool) {
		return baseURL(r) + r.URL.Path, h.deps.Directory.Revision() + "/" + strconv.FormatUint(h.view.Load(), 10), true
	}, render)
}

// baseURL is the URL of the API as the client of r reached it.
func baseURL(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// SourcePath is the path of the OpenAPI document of the Thing id of
// publisher.
func SourcePath(publisher peer.ID, id string) string {
	return PathSources + "/" + url.PathEscape(publisher.String()) + "/" + url.PathEscape(id) + "/openapi.json"
}
