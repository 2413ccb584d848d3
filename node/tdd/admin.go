package tdd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// maxAdminBody bounds an admin request body: a TD and a little more.
const maxAdminBody = lmosproto.MaxTDSize + 16<<10

// adminPublish serves POST /api/v1/things.
func (h *Handler) adminPublish(w http.ResponseWriter, r *http.Request) {
	if p := h.checkWrite(r, ""); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	var req PublishRequest
	if p := decodeBody(w, r, maxAdminBody, &req); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if len(bytes.TrimSpace(req.TD)) == 0 || string(bytes.TrimSpace(req.TD)) == "null" {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest, Detail: "request body: td is required",
			ValidationErrors: []lmosproto.FieldError{{Field: "/td", Description: "required: the Thing Description to publish"}}})
		return
	}
	var local *directory.Local
	if req.Backend != nil {
		if b := *req.Backend; b != "" {
			u, err := url.Parse(b)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest, Detail: fmt.Sprintf("request body: backend: %q is not an absolute http(s) URL", b),
					ValidationErrors: []lmosproto.FieldError{{Field: "/backend", Description: "must be an absolute http or https URL"}}})
				return
			}
		}
		local = &directory.Local{Backend: *req.Backend}
	}
	if len(req.TD) > lmosproto.MaxTDSize {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusRequestEntityTooLarge,
			Detail: fmt.Sprintf("request body: td is %d bytes, more than the %d a TD may have", len(req.TD), lmosproto.MaxTDSize)})
		return
	}
	td, p := parseTD("td", "/td", req.TD)
	if p == nil {
		p = takeRegistration(td, "/td")
	}
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if td.ID == "" {
		td.ID = "urn:uuid:" + uuid.NewString()
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	e, change, err := h.publish(r.Context(), td, local)
	if err != nil {
		h.writePublishErrorAt(w, r, td.ID, "/td", err)
		return
	}
	info, err := h.thingInfo(e)
	if err != nil {
		h.writeInternal(w, r, "read published", td.ID, err)
		return
	}
	status := http.StatusOK
	if change == directory.Created {
		status = http.StatusCreated
		w.Header().Set("Location", h.thingURL(r, td.ID, ""))
	}
	httpapi.WriteJSON(w, status, PublishResult{ThingInfo: info, Change: change.String()})
}

// adminList serves GET /api/v1/things: the node's own Things.
func (h *Handler) adminList(w http.ResponseWriter, r *http.Request) {
	own := h.deps.Directory.Own()
	out := make([]ThingInfo, 0, len(own))
	for _, e := range own {
		info, err := h.thingInfo(e)
		if err != nil {
			continue // removed since Own returned
		}
		out = append(out, info)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// adminDelete serves DELETE /api/v1/things/{id}.
func (h *Handler) adminDelete(w http.ResponseWriter, r *http.Request) {
	h.deleteThing(w, r)
}

// peers serves GET /api/v1/peers.
func (h *Handler) peers(w http.ResponseWriter, r *http.Request) {
	if h.deps.Peers == nil {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: "this node does not report its peers"})
		return
	}
	ps := h.deps.Peers.Peers()
	out := make([]Peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, toWirePeer(p))
	}
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.PeerID, b.PeerID) })
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// connect serves POST /api/v1/connect.
func (h *Handler) connect(w http.ResponseWriter, r *http.Request) {
	if h.deps.Peers == nil {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: "this node cannot connect to peers on request"})
		return
	}
	var req ConnectRequest
	if p := decodeBody(w, r, 64<<10, &req); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	fieldErr := func(desc string) {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest, Detail: fmt.Sprintf("request body: addr: %s", desc),
			ValidationErrors: []lmosproto.FieldError{{Field: "/addr", Description: desc}}})
	}
	if req.Addr == "" {
		fieldErr("required: the peer's multiaddr, ending in /p2p/<peer ID>")
		return
	}
	addr, err := ma.NewMultiaddr(req.Addr)
	if err != nil {
		fieldErr(fmt.Sprintf("%q is not a multiaddr: %v", req.Addr, err))
		return
	}
	info, err := peer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		fieldErr(fmt.Sprintf("%q must end in /p2p/<peer ID>: %v", req.Addr, err))
		return
	}
	if info.ID == h.deps.PeerID {
		fieldErr(fmt.Sprintf("%q is this node itself", req.Addr))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.ConnectTimeout)
	defer cancel()
	pi, err := h.deps.Peers.Connect(ctx, req.Addr)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: status, Detail: fmt.Sprintf("connect to %s: %v", info.ID, err)})
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, toWirePeer(pi))
}

// decodeBody decodes a JSON request body into v, refusing unknown members.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) *lmosproto.Problem {
	if p := checkContentType(r, ContentTypeJSON); p != nil {
		return p
	}
	body, p := readBody(w, r, limit)
	if p != nil {
		return p
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			field := "/" + strings.ReplaceAll(typeErr.Field, ".", "/")
			return &lmosproto.Problem{Status: http.StatusBadRequest, Detail: fmt.Sprintf("request body: %s: %v", typeErr.Field, err),
				ValidationErrors: []lmosproto.FieldError{{Field: field, Description: fmt.Sprintf("must be a JSON %s, not %s", typeErr.Type, typeErr.Value)}}}
		}
		if errors.Is(err, io.EOF) {
			return httpapi.Problemf(http.StatusBadRequest, "request body: empty; want a JSON object")
		}
		return httpapi.Problemf(http.StatusBadRequest, "request body: %v", err)
	}
	if dec.More() {
		return httpapi.Problemf(http.StatusBadRequest, "request body: data after the JSON object")
	}
	return nil
}
