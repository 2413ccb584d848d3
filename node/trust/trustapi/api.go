package trustapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/trust"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Paths of the trust routes.
const (
	PathList      = "/api/v1/trust"
	PathPublisher = "/api/v1/trust/{publisher}"
)

// Directory is what the Handler asks of the node's directory: the
// publisher a short form names, and the removal of a denied publisher's
// records. *directory.Directory implements it.
type Directory interface {
	ParsePublisher(s string) (peer.ID, error)
	DropPublisher(p peer.ID) (int, error)
}

// Deps are what a Handler works with.
type Deps struct {
	// List is the node's trust list. Required.
	List *trust.List
	// Self is the node's peer ID, which cannot be denied. Required.
	Self peer.ID
	// Directory names publishers and drops the denied ones. Required.
	Directory Directory
	// Save writes the list where the node keeps it (config.json's
	// "trust" member). Required.
	Save func(trust.Config) error
}

// Handler serves the trust routes (see the package documentation). It is
// safe for concurrent use.
type Handler struct {
	deps Deps
	log  *slog.Logger
	mux  *http.ServeMux
	// mu serialises changes with their write to the config file.
	mu sync.Mutex
}

// Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger of the list's changes (default: discard).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.log = l } }

// New returns the Handler of deps.
func New(deps Deps, opts ...Option) (*Handler, error) {
	switch {
	case deps.List == nil:
		return nil, errors.New("trustapi: Deps.List is nil")
	case deps.Self == "":
		return nil, errors.New("trustapi: Deps.Self is empty")
	case deps.Directory == nil:
		return nil, errors.New("trustapi: Deps.Directory is nil")
	case deps.Save == nil:
		return nil, errors.New("trustapi: Deps.Save is nil")
	}
	h := &Handler{deps: deps, log: slog.New(slog.DiscardHandler), mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	httpapi.HandleMethods(h.mux, PathList, map[string]http.HandlerFunc{http.MethodGet: h.list})
	httpapi.HandleMethods(h.mux, PathPublisher, map[string]http.HandlerFunc{http.MethodPut: h.set, http.MethodDelete: h.remove})
	return h, nil
}

// Paths returns the paths the Handler serves (every method), for a parent
// mux to route to it.
func Paths() []string { return []string{PathList, PathPublisher} }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Of is the wire form of the list l.
func Of(l *trust.List) List {
	c := l.Config()
	out := List{Entries: []Entry{}, OnlyTrusted: c.OnlyTrusted}
	for _, lv := range []struct {
		level trust.Level
		ids   []string
	}{{trust.Deny, c.Deny}, {trust.Prefer, c.Prefer}, {trust.Allow, c.Allow}} {
		for _, s := range lv.ids {
			if org, ok := trust.ParseOrganization(s); ok {
				out.Entries = append(out.Entries, Entry{Organization: org, Level: string(lv.level)})
				continue
			}
			id, err := peer.Decode(s)
			if err != nil {
				continue // Config holds peer IDs and organisations only
			}
			out.Entries = append(out.Entries, Entry{Publisher: s, Short: lmosproto.ShortPublisher(id), Level: string(lv.level)})
		}
	}
	return out
}

func (h *Handler) list(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, Of(h.deps.List))
}

// set serves PUT /api/v1/trust/{publisher}: the publisher (a peer ID,
// did:key or a short form of a publisher the directory holds) goes to the
// level of the body.
func (h *Handler) set(w http.ResponseWriter, r *http.Request) {
	level, ok := readLevel(w, r)
	if !ok {
		return
	}
	if org, isOrg := trust.ParseOrganization(r.PathValue("publisher")); isOrg {
		h.setOrganization(w, r, org, level)
		return
	}
	p, err := h.deps.Directory.ParsePublisher(r.PathValue("publisher"))
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("publisher: %v (nor an organisation DID or domain)", err))
		return
	}
	if p == h.deps.Self && level == trust.Deny {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("publisher %s is this node: it cannot be denied", p))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.deps.List.Level(p)
	if err := h.deps.List.Set(p, level); err != nil {
		writeProblem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.deps.Save(h.deps.List.Config()); err != nil {
		h.restore(p, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	out := Of(h.deps.List)
	if level == trust.Deny {
		dropped, err := h.deps.Directory.DropPublisher(p)
		if err != nil {
			writeProblem(w, r, http.StatusInternalServerError, err.Error())
			return
		}
		out.Dropped = dropped
	}
	h.log.Info("trust list changed", "publisher", p, "level", level, "dropped", out.Dropped)
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// readLevel reads the body of a PUT: false when it wrote a problem.
func readLevel(w http.ResponseWriter, r *http.Request) (trust.Level, bool) {
	body, prob := httpapi.ReadBody(w, r, 1<<10)
	if prob != nil {
		httpapi.WriteProblem(w, r, prob)
		return "", false
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("body: want {\"level\": \"allow\"|\"prefer\"|\"deny\"}: %v", err))
		return "", false
	}
	level, err := trust.ParseLevel(req.Level)
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, err.Error())
		return "", false
	}
	return level, true
}

// setOrganization puts an organisation (DID or domain) at level. Its
// members' records already held stay; a deny applies to what they send
// from then on, and marks them denied.
func (h *Handler) setOrganization(w http.ResponseWriter, r *http.Request, org string, level trust.Level) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.deps.List.OrganizationLevel(org)
	if err := h.deps.List.SetOrganization(org, level); err != nil {
		writeProblem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if err := h.deps.Save(h.deps.List.Config()); err != nil {
		h.restoreOrganization(org, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	h.log.Info("trust list changed", "organization", org, "level", level)
	httpapi.WriteJSON(w, http.StatusOK, Of(h.deps.List))
}

// removeOrganization serves DELETE of an organisation entry.
func (h *Handler) removeOrganization(w http.ResponseWriter, r *http.Request, org string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.deps.List.OrganizationLevel(org)
	if !h.deps.List.RemoveOrganization(org) {
		writeProblem(w, r, http.StatusNotFound, fmt.Sprintf("organisation %s is not on the trust list", org))
		return
	}
	if err := h.deps.Save(h.deps.List.Config()); err != nil {
		h.restoreOrganization(org, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	h.log.Info("trust list changed", "organization", org, "level", "none")
	httpapi.WriteJSON(w, http.StatusOK, Of(h.deps.List))
}

// restoreOrganization puts org back at level prev after a failed write.
func (h *Handler) restoreOrganization(org string, prev trust.Level) {
	if prev == "" {
		h.deps.List.RemoveOrganization(org)
		return
	}
	_ = h.deps.List.SetOrganization(org, prev)
}

// remove serves DELETE /api/v1/trust/{publisher}.
func (h *Handler) remove(w http.ResponseWriter, r *http.Request) {
	if org, isOrg := trust.ParseOrganization(r.PathValue("publisher")); isOrg {
		h.removeOrganization(w, r, org)
		return
	}
	p, err := h.listed(r.PathValue("publisher"))
	if err != nil {
		writeProblem(w, r, http.StatusNotFound, fmt.Sprintf("publisher: %v", err))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.deps.List.Level(p)
	if !h.deps.List.Remove(p) {
		writeProblem(w, r, http.StatusNotFound, fmt.Sprintf("publisher %s is not on the trust list", p))
		return
	}
	if err := h.deps.Save(h.deps.List.Config()); err != nil {
		h.restore(p, prev)
		writeProblem(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	h.log.Info("trust list changed", "publisher", p, "level", "none")
	httpapi.WriteJSON(w, http.StatusOK, Of(h.deps.List))
}

// listed returns the listed publisher s names: a peer ID, a did:key, or a
// short form that ends exactly one listed publisher (a denied one is no
// longer in the directory).
func (h *Handler) listed(s string) (peer.ID, error) {
	if id, err := lmosproto.ParsePublisher(s); err == nil {
		return id, nil
	}
	suffix, ok := lmosproto.PublisherSuffix(s)
	if !ok {
		return "", fmt.Errorf("%q is neither a peer ID, a did:key nor a short form", s)
	}
	var found []string
	for _, e := range Of(h.deps.List).Entries {
		if e.Publisher != "" && strings.HasSuffix(e.Publisher, suffix) {
			found = append(found, e.Publisher)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%q ends %d listed publishers (%s), want one", s, len(found), strings.Join(found, ", "))
	}
	return peer.Decode(found[0])
}

// restore puts p back at level prev ("" for unlisted) after a failed
// write.
func (h *Handler) restore(p peer.ID, prev trust.Level) {
	if prev == "" {
		h.deps.List.Remove(p)
		return
	}
	_ = h.deps.List.Set(p, prev)
}

func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: status, Detail: detail})
}
