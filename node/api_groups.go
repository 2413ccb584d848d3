package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/groups"
	"github.com/lmosnode/lmosnode/node/groupsvc"
)

// The group routes of the API (docs/groups.md, "HTTP API"). {id} is a
// group ID or a name that exactly one of the node's groups has.

const (
	// maxGroupBody bounds a request body of the group routes (a post's
	// body is the largest).
	maxGroupBody = groups.MaxMessageSize
	// groupHeartbeat is how often an idle message stream sends a comment,
	// so that proxies and clients see it alive.
	groupHeartbeat = 15 * time.Second
)

// groupsAPI serves the group routes with the node's group service.
type groupsAPI struct{ n *Node }

// mountGroups adds the group routes to mux.
func mountGroups(mux *http.ServeMux, n *Node) {
	g := groupsAPI{n}
	mux.HandleFunc("GET /api/v1/groups", g.list)
	mux.HandleFunc("POST /api/v1/groups", g.create)
	mux.HandleFunc("POST /api/v1/groups/join", g.join)
	mux.HandleFunc("GET /api/v1/groups/{id}", g.show)
	mux.HandleFunc("PATCH /api/v1/groups/{id}", g.patch)
	mux.HandleFunc("DELETE /api/v1/groups/{id}", g.act(false, func(ctx context.Context, id string, _ peer.ID) (groupsvc.Info, error) {
		return n.groups.Dissolve(ctx, id)
	}))
	mux.HandleFunc("POST /api/v1/groups/{id}/invitations", g.invite)
	mux.HandleFunc("DELETE /api/v1/groups/{id}/members/{peer}", g.act(true, n.groups.Remove))
	mux.HandleFunc("PUT /api/v1/groups/{id}/admins/{peer}", g.act(true, func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error) {
		return n.groups.SetAdmin(ctx, id, p, true)
	}))
	mux.HandleFunc("DELETE /api/v1/groups/{id}/admins/{peer}", g.act(true, func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error) {
		return n.groups.SetAdmin(ctx, id, p, false)
	}))
	mux.HandleFunc("POST /api/v1/groups/{id}/leave", g.act(false, func(ctx context.Context, id string, _ peer.ID) (groupsvc.Info, error) {
		return n.groups.Leave(ctx, id)
	}))
	mux.HandleFunc("POST /api/v1/groups/{id}/messages", g.post)
	mux.HandleFunc("GET /api/v1/groups/{id}/messages", g.messages)
}

// groupError answers err as a problem with the status docs/groups.md
// gives it.
func groupError(w http.ResponseWriter, r *http.Request, err error) {
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
func (g groupsAPI) resolve(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, err := g.n.groups.Resolve(r.PathValue("id"))
	if err != nil {
		groupError(w, r, err)
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

// decodeBody reads a JSON body into v; an empty body leaves v as is when
// optional.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGroupBody))
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("body: %v", err))
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

func (g groupsAPI) list(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.n.groups.List())
}

// createRequest is the body of POST /api/v1/groups.
type createRequest struct {
	Name   string         `json:"name"`
	Policy *groups.Policy `json:"policy,omitempty"`
}

func (g groupsAPI) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Name == "" {
		writeProblem(w, r, http.StatusBadRequest, "name: required")
		return
	}
	info, err := g.n.groups.Create(r.Context(), req.Name, req.Policy)
	if err != nil {
		groupError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, info)
}

func (g groupsAPI) show(w http.ResponseWriter, r *http.Request) {
	id, ok := g.resolve(w, r)
	if !ok {
		return
	}
	info, err := g.n.groups.Show(id)
	if err != nil {
		groupError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// patchRequest is the body of PATCH /api/v1/groups/{id}.
type patchRequest struct {
	Name   *string        `json:"name,omitempty"`
	Policy *groups.Policy `json:"policy,omitempty"`
}

func (g groupsAPI) patch(w http.ResponseWriter, r *http.Request) {
	id, ok := g.resolve(w, r)
	if !ok {
		return
	}
	var req patchRequest
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
		if info, err = g.n.groups.Rename(r.Context(), id, *req.Name); err != nil {
			groupError(w, r, err)
			return
		}
	}
	if req.Policy != nil {
		if info, err = g.n.groups.SetPolicy(r.Context(), id, *req.Policy); err != nil {
			groupError(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, info)
}

// act answers a group operation that needs only the group and, with
// withPeer, the {peer} of the path: it resolves them, runs do and answers
// the group's new GroupInfo.
func (g groupsAPI) act(withPeer bool, do func(ctx context.Context, id string, p peer.ID) (groupsvc.Info, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := g.resolve(w, r)
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
			groupError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, info)
	}
}

// inviteRequest is the body of POST /api/v1/groups/{id}/invitations.
type inviteRequest struct {
	For    string   `json:"for,omitempty"`
	TTL    string   `json:"ttl,omitempty"`
	Once   bool     `json:"once,omitempty"`
	Role   string   `json:"role,omitempty"`
	Things []string `json:"things,omitempty"`
}

// InvitationResponse is the answer of POST
// /api/v1/groups/{id}/invitations.
type InvitationResponse struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

func (g groupsAPI) invite(w http.ResponseWriter, r *http.Request) {
	id, ok := g.resolve(w, r)
	if !ok {
		return
	}
	var req inviteRequest
	if !decodeBody(w, r, &req, true) {
		return
	}
	o := groupsvc.InviteOptions{Once: req.Once, Role: req.Role, Things: req.Things}
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
	token, expires, err := g.n.groups.Invite(id, o)
	if err != nil {
		groupError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, InvitationResponse{Token: token, Expires: expires})
}

// joinRequest is the body of POST /api/v1/groups/join.
type joinRequest struct {
	Token string `json:"token"`
}

func (g groupsAPI) join(w http.ResponseWriter, r *http.Request) {
	var req joinRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Token == "" {
		writeProblem(w, r, http.StatusBadRequest, "token: required")
		return
	}
	res, err := g.n.groups.Join(r.Context(), req.Token)
	if err != nil {
		groupError(w, r, err)
		return
	}
	if res.Pending {
		writeJSON(w, http.StatusAccepted, res)
		return
	}
	writeJSON(w, http.StatusOK, res.Info)
}

func (g groupsAPI) post(w http.ResponseWriter, r *http.Request) {
	id, ok := g.resolve(w, r)
	if !ok {
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGroupBody))
	if err != nil {
		writeProblem(w, r, http.StatusBadRequest, fmt.Sprintf("body: %v", err))
		return
	}
	if !json.Valid(raw) {
		writeProblem(w, r, http.StatusBadRequest, "body: not JSON (send a JSON string for text)")
		return
	}
	if err := g.n.groups.Publish(r.Context(), id, raw); err != nil {
		groupError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// messages streams the group's posts as server-sent events: event "post",
// data {"from", "body", "sent"}.
func (g groupsAPI) messages(w http.ResponseWriter, r *http.Request) {
	id, ok := g.resolve(w, r)
	if !ok {
		return
	}
	ch, stop, err := g.n.groups.Subscribe(id)
	if err != nil {
		groupError(w, r, err)
		return
	}
	defer stop()
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		// A client that stops reading must not hold the stream forever.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * groupHeartbeat))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send([]byte("retry: 2000\n\n")) {
		return
	}
	tick := time.NewTicker(groupHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-g.n.ctx.Done():
			return
		case <-tick.C:
			if !send([]byte(": heartbeat\n\n")) {
				return
			}
		case p, ok := <-ch:
			if !ok {
				return
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, mustJSON(p)); err != nil {
				continue
			}
			if !send([]byte("event: post\ndata: " + buf.String() + "\n\n")) {
				return
			}
		}
	}
}

// mustJSON encodes a Received (which always encodes).
func mustJSON(p groupsvc.Received) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		return []byte("null")
	}
	return b
}
