package aicatalog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes and media types (docs/api.md, docs/bridges.md).
const (
	// PathCatalog is the node's AI Catalog.
	PathCatalog = "/.well-known/ai-catalog.json"
	// PathRegistry is the base URL of the node's ARD registry API; its
	// search is PathSearch.
	PathRegistry = "/ard/"
	PathSearch   = PathRegistry + "search"
	// PathImports is where `lmosnode import ai-catalog` posts a catalog URL.
	PathImports = "/api/v1/ai-catalog/imports"

	// MediaTypeCatalog is the catalog's media type.
	MediaTypeCatalog = "application/ai-catalog+json"
	// TypeA2ACard, TypeServerCard and TypeRegistry are the entry types
	// the node lists and imports.
	TypeA2ACard    = "application/a2a-agent-card+json"
	TypeServerCard = "application/mcp-server-card+json"
	TypeRegistry   = "application/ai-registry+json"
	// SpecVersion is the AI Catalog version the node writes.
	SpecVersion = "1.0"

	// DefaultLimit and MaxLimit are the default and largest page of the
	// catalog (query parameters offset and limit); MaxCatalogBytes bounds
	// a page: one that would be longer ends early, and its Link
	// rel="next" continues after it.
	DefaultLimit    = 100
	MaxLimit        = 500
	MaxCatalogBytes = 1 << 20
	// maxCapabilities bounds the capabilities (MCP tool names) of the
	// MCP endpoint's entry.
	maxCapabilities = 512
)

// Catalog is an AI Catalog document. It is valid against ARD's JSON
// Schema, whose root takes no members but these.
type Catalog struct {
	SpecVersion string  `json:"specVersion"`
	Host        *Host   `json:"host,omitempty"`
	Entries     []Entry `json:"entries"`
}

// Host is the catalog's Host Info.
type Host struct {
	DisplayName string `json:"displayName"`
	Identifier  string `json:"identifier,omitempty"`
}

// Publisher is an entry's Publisher object (AI Catalog).
type Publisher struct {
	Identifier  string `json:"identifier"`
	DisplayName string `json:"displayName"`
}

// Entry is a Catalog Entry: the members of AI Catalog and ARD's.
type Entry struct {
	Identifier   string            `json:"identifier"`
	DisplayName  string            `json:"displayName,omitempty"`
	Type         string            `json:"type"`
	URL          string            `json:"url,omitempty"`
	Data         json.RawMessage   `json:"data,omitempty"`
	Description  string            `json:"description,omitempty"`
	Tags         []string          `json:"tags,omitempty"`
	Capabilities []string          `json:"capabilities,omitempty"`
	Version      string            `json:"version,omitempty"`
	UpdatedAt    string            `json:"updatedAt,omitempty"`
	Publisher    *Publisher        `json:"publisher,omitempty"`
	Digest       string            `json:"digest,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// TrustManifests are kept as sent: a manifest's unknown members are
	// part of its signed payload.
	TrustManifests []json.RawMessage `json:"trustManifests,omitempty"`
}

// Metadata keys of an entry of a Thing.
const (
	MetaThingID   = "lmos:thingId"
	MetaPublisher = "lmos:publisher"
)

// TDs gives the parsed TD of a directory entry; own.Things implements it.
type TDs interface {
	TDOf(publisher peer.ID, id string) (*lmosproto.TD, bool)
}

// Finder looks Things up beyond the directory, as the listing's
// capability filter does (tdd.Finder; the federation implements it): what
// it finds lands in the directory.
type Finder interface {
	LookupCapability(ctx context.Context, id string) error
}

// Deps are what a Handler works with. All are required but Finder and
// the importers (an import route without them answers 501).
type Deps struct {
	// Directory lists the Things; Visible hides those this node may not
	// see (group-scoped Things of groups it is not in).
	Directory *directory.Directory
	Visible   func(directory.Entry) bool
	TDs       TDs
	// Self is this node's peer ID; Key its signing key (the manifests').
	Self peer.ID
	Key  ed25519.PrivateKey
	// Cards serves the A2A agent cards (the A2A bridge) at
	// CardPath(publisher, id); the catalog lists their URLs and digests.
	Cards    http.Handler
	CardPath func(publisher peer.ID, id string) string
	// ServerCard serves the MCP Server Card at ServerCardPath;
	// ToolNames names the MCP tools of a Thing (mcpbridge.Server).
	ServerCard     http.Handler
	ServerCardPath string
	ToolNames      func(publisher peer.ID, id string) []string
	// Finder asks the network for a capability the directory lacks.
	Finder Finder
	// ImportA2A and ImportMCP publish imported entries (the A2A and MCP
	// imports).
	ImportA2A func(ctx context.Context, req A2AImport) (any, error)
	ImportMCP func(ctx context.Context, endpoint string) (any, error)
}

// A2AImport is what the catalog import asks of the A2A import.
type A2AImport struct {
	// Card is the card's URL; Digest the digest its bytes must have
	// (empty: any); Key the Ed25519 key of the manifest's signer, which
	// the A2A import may verify the card's own signature with.
	Card   string
	Digest string
	Key    ed25519.PublicKey
	// AllowUnsigned imports a card without a signature that verifies.
	AllowUnsigned bool
}

// Config configures a Handler.
type Config struct {
	// FetchTimeout bounds an import's fetches (each). Default 10 s.
	FetchTimeout time.Duration
	// FindTimeout bounds a search's lookup in the network. Default 10 s.
	FindTimeout time.Duration
	// Client fetches imported catalogs and artifacts; default a client
	// of its own. Redirects to another host are refused either way.
	Client *http.Client
	// Log takes the handler's logs.
	Log *slog.Logger
}

// Handler serves the node's AI Catalog, its ARD search and the catalog
// import (see the package documentation). It is safe for concurrent use.
type Handler struct {
	deps   Deps
	cfg    Config
	signer *signer
	mux    *http.ServeMux
	docs   *httpapi.DocCache
	view   atomic.Uint64 // Refresh calls
	client *http.Client
	now    func() time.Time
}

// New returns the Handler of deps.
func New(deps Deps, cfg Config) (*Handler, error) {
	switch {
	case deps.Directory == nil, deps.Visible == nil, deps.TDs == nil, deps.Self == "",
		deps.Cards == nil, deps.CardPath == nil, deps.ServerCard == nil, deps.ServerCardPath == "", deps.ToolNames == nil:
		return nil, errors.New("aicatalog: a required dependency is missing")
	case len(deps.Key) != ed25519.PrivateKeySize:
		return nil, errors.New("aicatalog: Deps.Key is not an Ed25519 private key")
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	if cfg.FindTimeout <= 0 {
		cfg.FindTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s, err := newSigner(deps.Key)
	if err != nil {
		return nil, err
	}
	h := &Handler{deps: deps, cfg: cfg, signer: s, now: time.Now,
		docs: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 32, MaxBytes: 16 * MaxCatalogBytes})}
	h.client = sameHostClient(cfg.Client)
	h.mux = http.NewServeMux()
	h.mux.Handle("GET "+PathCatalog, h.docs.Handler(h.catalogKey, http.HandlerFunc(h.serveCatalog)))
	h.mux.HandleFunc("POST "+PathSearch, h.serveSearch)
	h.mux.HandleFunc("POST "+PathImports, h.serveImport)
	return h, nil
}

// Patterns returns the ServeMux patterns the handler serves.
func Patterns() []string { return []string{PathCatalog, PathSearch, PathImports} }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// Refresh tells the handler that what this node may see changed (its
// group memberships): the catalog is rendered again.
func (h *Handler) Refresh() { h.view.Add(1) }

// catalogKey keys a page of the catalog by base URL, path and query, at
// the directory's revision and the view's.
func (h *Handler) catalogKey(r *http.Request) (string, string, bool) {
	return httpapi.BaseURL(r) + r.URL.RequestURI(), h.deps.Directory.Revision() + "/" + strconv.FormatUint(h.view.Load(), 10), true
}

// serveCatalog renders a page of the catalog: on the first, the entries
// of the registry and of the MCP endpoint; then one entry per agent this
// node may see, by thing id, at most limit of them and MaxCatalogBytes.
// A Link rel="next" header leads to the next page (ARD's schema takes no
// paging member in the document).
func (h *Handler) serveCatalog(w http.ResponseWriter, r *http.Request) {
	offset, limit, p := page(r.URL.Query())
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	base := httpapi.BaseURL(r)
	cat := Catalog{SpecVersion: SpecVersion, Host: &Host{DisplayName: "LMOS node " + h.deps.Self.String(), Identifier: h.signer.did}, Entries: []Entry{}}
	size := 1024
	if offset == 0 {
		cat.Entries = append(cat.Entries, h.registryEntry(r), h.mcpEntry(r, nil))
	}
	res, err := h.deps.Directory.Search(directory.Query{Type: lmosproto.TypeAgent, Visible: h.deps.Visible, ByID: true, Offset: offset, Limit: limit})
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "listing agents: %v", err))
		return
	}
	consumed, listed := 0, 0
	for _, de := range res.Entries {
		e, ok := h.agentEntry(r, de)
		consumed++
		if !ok {
			continue
		}
		b, _ := json.Marshal(e) // strings and JSON
		if size+len(b) > MaxCatalogBytes && listed > 0 {
			consumed--
			break
		}
		size += len(b)
		listed++
		cat.Entries = append(cat.Entries, e)
	}
	if next := offset + consumed; next < res.Total && consumed > 0 {
		q := url.Values{"offset": {strconv.Itoa(next)}, "limit": {strconv.Itoa(limit)}}
		w.Header().Set("Link", "<"+base+PathCatalog+"?"+q.Encode()+`>; rel="next"`)
	}
	body, _ := json.Marshal(cat)
	w.Header().Set("Content-Type", MediaTypeCatalog)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}

// page reads the offset and limit of a catalog page.
func page(q url.Values) (offset, limit int, p *lmosproto.Problem) {
	limit = DefaultLimit
	for name, dst := range map[string]*int{"offset": &offset, "limit": &limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (name == "limit" && (n == 0 || n > MaxLimit)) {
				return 0, 0, httpapi.Problemf(http.StatusBadRequest, "%s %q: want an integer (limit 1 to %d)", name, v, MaxLimit)
			}
			*dst = n
		}
	}
	return offset, limit, nil
}

// registryEntry is the entry of the node's ARD registry API.
func (h *Handler) registryEntry(r *http.Request) Entry {
	return Entry{
		Identifier:  h.identifier(r, "registry", "search"),
		DisplayName: "LMOS node " + h.deps.Self.String() + " registry",
		Type:        TypeRegistry,
		URL:         httpapi.BaseURL(r) + PathRegistry,
		Description: "Search (ARD POST /search) over this node's directory of agents and tools, the federation behind it.",
	}
}

// mcpEntry is the entry of the node's MCP endpoint: its Server Card,
// the MCP tools as capabilities (of the Things of only, if set, else of
// every agent and tool this node may see, at most maxCapabilities).
func (h *Handler) mcpEntry(r *http.Request, only *directory.Entry) Entry {
	e := Entry{
		Identifier:  h.identifier(r, "mcp", "node"),
		DisplayName: "LMOS node " + h.deps.Self.String() + " (MCP)",
		Type:        TypeServerCard,
		URL:         httpapi.BaseURL(r) + h.deps.ServerCardPath,
		Tags:        []string{"mcp"},
	}
	var things []directory.Entry
	if only != nil {
		things = []directory.Entry{*only}
		e.Identifier = h.thingIdentifier(r, "mcp", *only)
		e.DisplayName = only.Title + " (MCP)"
		e.Metadata = map[string]string{MetaThingID: only.ThingID, MetaPublisher: only.Publisher.String()}
		e.Publisher = h.publisher(only.Publisher)
	} else if res, err := h.deps.Directory.Search(directory.Query{Visible: h.deps.Visible, ByID: true}); err == nil {
		things = res.Entries
	}
	for _, t := range things {
		if len(e.Capabilities) >= maxCapabilities {
			break
		}
		e.Capabilities = append(e.Capabilities, h.deps.ToolNames(t.Publisher, t.ThingID)...)
	}
	e.Capabilities = e.Capabilities[:min(len(e.Capabilities), maxCapabilities)]
	body, ok := h.local(r, h.deps.ServerCard, h.deps.ServerCardPath)
	if ok {
		h.sign(&e, body)
	}
	return e
}

// agentEntry is the entry of the agent de: its A2A card's URL and
// digest, signed; false if the card cannot be rendered (the agent went
// away).
func (h *Handler) agentEntry(r *http.Request, de directory.Entry) (Entry, bool) {
	path := h.deps.CardPath(de.Publisher, de.ThingID)
	body, ok := h.local(r, h.deps.Cards, path)
	if !ok {
		return Entry{}, false
	}
	e := Entry{
		Identifier:  h.thingIdentifier(r, "a2a", de),
		DisplayName: de.Title,
		Type:        TypeA2ACard,
		URL:         httpapi.BaseURL(r) + path,
		Tags:        []string{"agent"},
		Metadata:    map[string]string{MetaThingID: de.ThingID, MetaPublisher: de.Publisher.String()},
		Publisher:   h.publisher(de.Publisher),
	}
	if !de.Modified.IsZero() {
		e.UpdatedAt = de.Modified.UTC().Format(time.RFC3339)
	}
	if td, ok := h.deps.TDs.TDOf(de.Publisher, de.ThingID); ok {
		e.Description = td.Description
	}
	for _, c := range de.Capabilities {
		e.Capabilities = append(e.Capabilities, c.ID)
	}
	h.sign(&e, body)
	return e, true
}

// sign sets e's digest (of the artifact's bytes body) and the node's
// trust manifest.
func (h *Handler) sign(e *Entry, body []byte) {
	if err := h.signer.signEntry(e, body, h.now()); err != nil {
		h.cfg.Log.Warn("signing a trust manifest", "entry", e.Identifier, "err", err)
	}
}

// publisher is the Publisher object of a Thing's publisher: its did:key.
func (h *Handler) publisher(id peer.ID) *Publisher {
	pub, err := lmosproto.Ed25519FromPeerID(id)
	if err != nil {
		return &Publisher{Identifier: "urn:lmos:peer:" + id.String(), DisplayName: id.String()}
	}
	return &Publisher{Identifier: lmosproto.DIDKey(pub), DisplayName: "LMOS node " + id.String()}
}

// local answers a GET of path by handler as r's client would get it,
// and returns the body of a 200.
func (h *Handler) local(r *http.Request, handler http.Handler, path string) ([]byte, bool) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
	if err != nil {
		return nil, false
	}
	req.Host, req.TLS = r.Host, r.TLS
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	rec := &recorder{header: http.Header{}}
	handler.ServeHTTP(rec, req)
	return rec.body.Bytes(), rec.status == http.StatusOK || rec.status == 0
}

// recorder records an in-process answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorder) Header() http.Header { return rec.header }
func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}
func (rec *recorder) Write(p []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return rec.body.Write(p)
}

// invalidSegment and invalidHost match what a urn:air segment and its
// publisher segment may not hold.
var (
	invalidSegment = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)
	invalidHost    = regexp.MustCompile(`[^a-zA-Z0-9.-]+`)
)

// identifier is the urn:air identifier of an entry of this node reached
// at r's host: urn:air:{host}:lmos:{kind}:{name} (ARD's pattern; the
// host's characters outside it become "-").
func (h *Handler) identifier(r *http.Request, kind, name string) string {
	host := r.Host
	if u, err := url.Parse("http://" + r.Host); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	host = strings.Trim(invalidHost.ReplaceAllString(host, "-"), "-")
	if host == "" {
		host = "localhost"
	}
	return "urn:air:" + host + ":lmos:" + kind + ":" + name
}

// thingIdentifier is the identifier of the entry of kind of the Thing de:
// its publisher's peer ID, then its id with the characters a URN segment
// may not hold as "-" and a hash of the id when that changed it.
func (h *Handler) thingIdentifier(r *http.Request, kind string, de directory.Entry) string {
	name := strings.Trim(invalidSegment.ReplaceAllString(de.ThingID, "-"), "-")
	if name != de.ThingID || name == "" {
		name += "." + Digest([]byte(de.ThingID))[len("sha256:"):][:10]
		name = strings.TrimPrefix(name, ".")
	}
	return h.identifier(r, kind, de.Publisher.String()+":"+name)
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) { httpapi.WriteJSON(w, status, v) }

// visibleAgentOrTool reports whether de is an agent or tool this node may
// see.
func (h *Handler) visibleAgentOrTool(de directory.Entry) bool {
	return !de.Tombstone && h.deps.Visible(de) &&
		(slices.Contains(de.Types, lmosproto.TypeAgent) || slices.Contains(de.Types, lmosproto.TypeTool))
}
