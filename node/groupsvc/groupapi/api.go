package groupapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

const (
	// maxBody bounds a request body (a post's body is the largest).
	maxBody = groups.MaxMessageSize
	// heartbeat is how often an idle message stream sends a comment, so
	// that proxies and clients see it alive.
	heartbeat = 15 * time.Second
)

// Deps are what a Handler works with.
type Deps struct {
	// Groups is the node's group service. Required.
	Groups *groupsvc.Service
}

// Handler serves the group routes (see the package documentation). Build
// it with New, mount its Patterns, and Close it before shutting the HTTP
// server down: Close ends the message streams. It is safe for concurrent
// use.
type Handler struct {
	svc *groupsvc.Service
	mux *http.ServeMux

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

// New returns the Handler of deps.
func New(deps Deps) (*Handler, error) {
	if deps.Groups == nil {
		return nil, errors.New("groupapi: Deps.Groups is nil")
	}
	h := &Handler{svc: deps.Groups, mux: http.NewServeMux(), done: make(chan struct{})}
	for pattern, fn := range h.routes() {
		h.mux.HandleFunc(pattern, fn)
	}
	return h, nil
}

// Patterns returns the http.ServeMux patterns the Handler serves, for a
// parent mux to route to it. They name their methods, so another method
// on one of these paths goes wherever the parent routes it.
func Patterns() []string {
	return slices.Sorted(maps.Keys((&Handler{}).routes()))
}

// routes maps each pattern to its handler. It only builds closures, so
// Patterns calls it on a zero Handler.
func (h *Handler) routes() map[string]http.HandlerFunc {
	s := h.svc
	return map[string]http.HandlerFunc{
		"GET /api/v1/groups":        h.list,
		"POST /api/v1/groups":       h.create,
		"POST /api/v1/groups/join":  h.join,
		"GET /api/v1/groups/{id}":   h.show,
		"PATCH /api/v1/groups/{id}": h.patch,
		"DELETE /api/v1/groups/{id}": h.act(false, func(ctx context.Context, id string, _ peer.ID) (groupsvc.Info, error) {
			return s.Dissolve(ctx, id)
		}),
		"POST /api/v1/groups/{id}/invitations": h.invite,
		"GET /api/v1/groups/{id}/invitations":  h.invitations,
		"DELETE /api/v1/groups/{id}/invitations/{inv}": func(w http.ResponseWriter, r *http.Request) {
			h.act(false, func(ctx context.Context, id string, _ peer.ID) (groupsvc.Info, error) {
				return s.RevokeInvitation(ctx, id, r.PathValue("inv"))
			})(w, r)
		},
		"DELETE /api/v1/groups/{id}/members/{peer}": h.act(true, s.Remove),
		"PUT /api/v1/groups/{id}/admins/{peer}": h.act(true, func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error) {
			return s.SetAdmin(ctx, id, p, true)
		}),
		"DELETE /api/v1/groups/{id}/admins/{peer}": h.act(true, func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error) {
			return s.SetAdmin(ctx, id, p, false)
		}),
		"POST /api/v1/groups/{id}/leave": h.act(false, func(ctx context.Context, id string, _ peer.ID) (groupsvc.Info, error) {
			return s.Leave(ctx, id)
		}),
		"POST /api/v1/groups/{id}/messages": h.post,
		"GET /api/v1/groups/{id}/messages":  h.messages,
	}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close ends the message streams (their handlers return at once), and
// those opened later as soon as they start. It is idempotent.
func (h *Handler) Close() error {
	h.closeOnce.Do(func() { close(h.done) })
	return nil
}

// serviceError answers err as a problem with the status docs/groups.md
// gives it.
func serviceError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var refused *groupsvc.RefusedError
	switch {
	case errors.As(err, &refused):
		status = refused.Status
	case errors.Is(err, groupsvc.ErrBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, groupsvc.ErrUnknownGroup):
		status = http.StatusNotFound
	case errors.Is(err, groupsvc.ErrNotAdmin), errors.Is(err, groupsvc.ErrNotAllowed):
		status = http.StatusForbidden
	case errors.Is(err, groupsvc.ErrNotMember):
		status = http.StatusForbidden
		if r.PathValue("peer") != "" {
			status = http.StatusNotFound
		}
	case errors.Is(err, groupsvc.ErrDissolved), errors.Is(err, groupsvc.ErrLastAdmin):
		status = http.StatusConflict
	case errors.Is(err, groups.ErrExpired):
		status = http.StatusGone
	case errors.Is(err, groupsvc.ErrNoGossip), errors.Is(err, groupsvc.ErrClosed):
		status = http.StatusServiceUnavailable
	}
	writeProblem(w, r, status, err.Error())
}

// resolve returns the group ID of the {id} path value.
func (h *Handler) resolve(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, err := h.svc.Resolve(r.PathValue("id"))
	if err != nil {
		serviceError(w, r, err)
		return "", false
	}
	return id, true
}

// peerParam parses the {peer} path value.
func peerParam(w http.ResponseWriter, r *http.Request) (peer.ID, bool) {
	p, err := peer.Decode(r.PathValue("peer"))
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("peer: %q: %v", r.PathValue("peer"), err))
		return "", false
	}
	return p, true
}

// readBody reads a request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	raw, p := httpapi.ReadBody(w, r, maxBody)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return nil, false
	}
	return raw, true
}

// decodeBody reads a JSON body into v; an empty body leaves v as is when
// optional.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	raw, ok := readBody(w, r)
	if !ok {
		return false
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return true
		}
		writeProblem(w, r, http.StatusBadRequest, "body: empty, want a JSON object")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("body: %v", err))
		return false
	}
	return true
}

func (h *Handler) list(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, toWireList(h.svc.List()))
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Name == "" {
		writeProblem(w, r, http.StatusBadRequest, "name: required")
		return
	}
	info, err := h.svc.Create(r.Context(), req.Name, req.Policy)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, toWire(info))
}

func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	info, err := h.svc.Show(id)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, toWire(info))
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	var req PatchRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Name == nil && req.Policy == nil {
		writeProblem(w, r, http.StatusBadRequest, "body: name or policy required")
		return
	}
	var info groupsvc.Info
	var err error
	if req.Name != nil {
		if info, err = h.svc.Rename(r.Context(), id, *req.Name); err != nil {
			serviceError(w, r, err)
			return
		}
	}
	if req.Policy != nil {
		if info, err = h.svc.SetPolicy(r.Context(), id, *req.Policy); err != nil {
			serviceError(w, r, err)
			return
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, toWire(info))
}

// act answers a group operation that needs only the group and, with
// withPeer, the {peer} of the path: it resolves them, runs do and answers
// the group's new GroupInfo.
func (h *Handler) act(withPeer bool, do func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := h.resolve(w, r)
		if !ok {
			return
		}
		var p peer.ID
		if withPeer {
			if p, ok = peerParam(w, r); !ok {
				return
			}
		}
		info, err := do(r.Context(), id, p)
		if err != nil {
			serviceError(w, r, err)
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, toWire(info))
	}
}

func (h *Handler) invite(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	var req InviteRequest
	if !decodeBody(w, r, &req, true) {
		return
	}
	o := groupsvc.InviteOptions{Role: req.Role, Things: req.Things}
	if req.Uses != nil {
		switch n := *req.Uses; {
		case n == 0:
			o.Uses = groupsvc.UnlimitedUses
		case n > 0:
			o.Uses = n
		default:
			writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("uses: %d: want a positive count, or 0 for no limit", n))
			return
		}
	}
	if req.For != "" {
		p, err := peer.Decode(req.For)
		if err != nil {
			writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("for: %q: %v", req.For, err))
			return
		}
		o.For = p
	}
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 {
			writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("ttl: %q: want a positive duration such as \"24h\"", req.TTL))
			return
		}
		o.TTL = d
	}
	token, expires, err := h.svc.Invite(id, o)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	inv, err := groups.ParseInvitation(token, time.Time{})
	if err != nil {
		serviceError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, Invitation{Token: token, ID: inv.ID, Expires: expires})
}

func (h *Handler) invitations(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	all := false
	if v := r.URL.Query().Get("all"); v != "" {
		var err error
		if all, err = strconv.ParseBool(v); err != nil {
			writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("query parameter all: %q: want true or false", v))
			return
		}
	}
	ins, err := h.svc.Invitations(r.Context(), id, all)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, invitationsToWire(ins))
}

func (h *Handler) join(w http.ResponseWriter, r *http.Request) {
	var req JoinRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Token == "" {
		writeProblem(w, r, http.StatusBadRequest, "token: required")
		return
	}
	res, err := h.svc.Join(r.Context(), req.Token)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	if res.Pending {
		httpapi.WriteJSON(w, http.StatusAccepted, JoinResult{Group: res.Group, Pending: true})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, toWire(*res.Info))
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	raw, ok := readBody(w, r)
	if !ok {
		return
	}
	if !json.Valid(raw) {
		writeProblem(w, r, http.StatusBadRequest, "body: not JSON (send a JSON string for text)")
		return
	}
	if err := h.svc.Publish(r.Context(), id, raw); err != nil {
		serviceError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// messages streams the group's posts as server-sent events: event "post",
// data a Post.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	id, ok := h.resolve(w, r)
	if !ok {
		return
	}
	ch, stop, err := h.svc.Subscribe(id)
	if err != nil {
		serviceError(w, r, err)
		return
	}
	defer stop()
	stream, err := httpapi.StartStream(w, httpapi.StreamConfig{Retry: 2 * time.Second, KeepAlive: heartbeat, WriteTimeout: 2 * heartbeat})
	if err != nil {
		return
	}
	defer stream.Close()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-stream.KeepAlive():
			if stream.Ping() != nil {
				return
			}
		case p, ok := <-ch:
			if !ok {
				return
			}
			data, err := json.Marshal(postToWire(p))
			if err != nil {
				continue
			}
			if stream.Send(httpapi.Event{Type: "post", Data: string(data)}) != nil {
				return
			}
		}
	}
}
