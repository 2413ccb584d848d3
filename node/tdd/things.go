package tdd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// resolve finds the Thing a read of /things/{id} means (see the package
// documentation, "Identity") with Deps.Resolver, as the caller sees the
// directory.
func (h *Handler) resolve(r *http.Request, id string) (directory.Entry, *lmosproto.Problem) {
	if id == "" {
		return directory.Entry{}, &lmosproto.Problem{Status: http.StatusNotFound, Detail: "no thing id in the path: GET /things/{id}"}
	}
	var pub peer.ID
	if s := r.URL.Query().Get("publisher"); s != "" {
		var err error
		if pub, err = h.deps.Directory.ParsePublisher(s); err != nil {
			return directory.Entry{}, httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err)
		}
	}
	vis := h.visible(r)
	if vis == nil {
		vis = func(directory.Entry) bool { return true }
	}
	e, err := h.deps.Resolver.ResolveAs(r.Context(), id, pub, false, vis)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusInternalServerError, "resolving thing %q: %v", id, err)
		}
		for i, c := range p.Candidates {
			if cp, err := peer.Decode(c.Publisher); err == nil {
				p.Candidates[i].Href = h.thingURL(r, id, cp)
			}
		}
		return directory.Entry{}, p
	}
	return e, nil
}

// putThing serves PUT /things/{id}: create (201) or update (204) an own
// Thing.
func (h *Handler) putThing(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if p := h.checkWrite(r, id); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	td, p := readTD(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	switch td.ID {
	case "":
		td.ID = id
	case id:
	default:
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest,
			Detail:           fmt.Sprintf("the TD's id %q differs from the id %q in the path", td.ID, id),
			ValidationErrors: []lmosproto.FieldError{{Field: "/id", Description: fmt.Sprintf("must be %q, the id in the path", id)}}})
		return
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	e, change, err := h.publish(r.Context(), td, nil)
	if err != nil {
		h.writePublishError(w, r, td.ID, err)
		return
	}
	if change == directory.Created {
		w.Header().Set("Location", h.thingURL(r, e.ThingID, ""))
		w.WriteHeader(http.StatusCreated)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// createAnonymous serves POST /things: a TD without id gets a urn:uuid id.
func (h *Handler) createAnonymous(w http.ResponseWriter, r *http.Request) {
	if p := h.checkWrite(r, ""); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	td, p := readTD(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if td.ID != "" {
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusBadRequest,
			Detail:           fmt.Sprintf("POST /things creates an anonymous TD, but this one has id %q: use PUT /things/{id}", td.ID),
			ValidationErrors: []lmosproto.FieldError{{Field: "/id", Description: "must be absent: the directory assigns the id of an anonymous TD"}}})
		return
	}
	td.ID = "urn:uuid:" + uuid.NewString()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	e, _, err := h.publish(r.Context(), td, nil)
	if err != nil {
		h.writePublishError(w, r, td.ID, err)
		return
	}
	w.Header().Set("Location", h.thingURL(r, e.ThingID, ""))
	w.WriteHeader(http.StatusCreated)
}

// patchThing serves PATCH /things/{id}: an RFC 7396 merge patch of an own
// Thing, re-validated and republished.
func (h *Handler) patchThing(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if p := h.checkWrite(r, id); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	patch, p := readMergePatch(w, r)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}

	h.wmu.Lock()
	defer h.wmu.Unlock()
	e, p := h.ownThing(r, id)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	raw, err := e.Raw()
	if err != nil {
		h.writeInternal(w, r, "read thing", id, err)
		return
	}
	current, err := decodeJSON(raw)
	if err != nil {
		h.writeInternal(w, r, "decode thing", id, err)
		return
	}
	td, p := patchedTD(id, current, patch)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if _, _, err := h.publish(r.Context(), td, nil); err != nil {
		h.writePublishError(w, r, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readMergePatch reads the request body of a PATCH: a JSON merge patch
// (RFC 7396) of a TD, which is a JSON object.
func readMergePatch(w http.ResponseWriter, r *http.Request) (any, *lmosproto.Problem) {
	if p := checkContentType(r, ContentTypeMergePatch); p != nil {
		return nil, p
	}
	body, p := readBody(w, r, lmosproto.MaxTDSize)
	if p != nil {
		return nil, p
	}
	patch, err := decodeJSON(body)
	if err != nil {
		return nil, httpapi.Problemf(http.StatusBadRequest, "request body: not JSON: %v", err)
	}
	if _, ok := patch.(map[string]any); !ok {
		return nil, httpapi.Problemf(http.StatusBadRequest, "request body: a merge patch of a TD must be a JSON object")
	}
	return patch, nil
}

// patchedTD applies the merge patch to current, the decoded signed TD of
// thing id, and checks the result: the same id, a valid TD without
// registration information.
func patchedTD(id string, current, patch any) (*lmosproto.TD, *lmosproto.Problem) {
	if obj, ok := current.(map[string]any); ok {
		// The Publisher signs anew and picks the next lmos:seq; what the
		// node added when it signed is not the client's to patch.
		delete(obj, "proof")
		delete(obj, "lmos:seq")
	}
	merged := mergePatch(current, patch)
	if got, _ := merged.(map[string]any)["id"].(string); got != id {
		return nil, &lmosproto.Problem{Status: http.StatusBadRequest,
			Detail:           fmt.Sprintf("the patch changes the id of thing %q; the id names the Thing and cannot change", id),
			ValidationErrors: []lmosproto.FieldError{{Field: "/id", Description: fmt.Sprintf("must stay %q", id)}}}
	}
	doc, err := encodeJSON(merged)
	if err != nil {
		return nil, httpapi.Problemf(http.StatusBadRequest, "patched thing %q: %v", id, err)
	}
	if err := lmosproto.ValidateTD(doc); err != nil {
		return nil, invalidTD(fmt.Sprintf("thing %q after the patch", id), "", err)
	}
	td, err := lmosproto.ParseTD(doc)
	if err != nil {
		return nil, invalidTD(fmt.Sprintf("thing %q after the patch", id), "", err)
	}
	if p := takeRegistration(td, ""); p != nil {
		return nil, p
	}
	return td, nil
}

// deleteThing serves DELETE /things/{id}.
func (h *Handler) deleteThing(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if p := h.checkWrite(r, id); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if _, p := h.ownThing(r, id); p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if err := h.remove(r.Context(), id); err != nil {
		h.writePublishError(w, r, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkWrite refuses a write when the node cannot publish, when the path
// has no id (id "" is allowed only for POST /things), or when the request
// names another publisher.
func (h *Handler) checkWrite(r *http.Request, id string) *lmosproto.Problem {
	if h.deps.Publisher == nil {
		return &lmosproto.Problem{Status: http.StatusNotImplemented, Detail: "this node has no publisher: its directory is read-only"}
	}
	if r.Method != http.MethodPost && id == "" {
		return &lmosproto.Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("no thing id in the path: %s /things/{id}", r.Method)}
	}
	if s := r.URL.Query().Get("publisher"); s != "" {
		pub, err := h.deps.Directory.ParsePublisher(s)
		if err != nil {
			return httpapi.Problemf(http.StatusBadRequest, "query parameter publisher: %v", err)
		}
		if pub != h.deps.PeerID {
			return &lmosproto.Problem{Status: http.StatusForbidden,
				Detail: fmt.Sprintf("thing %q of %s is read-only: this node (%s) changes only its own Things", id, pub, h.deps.PeerID)}
		}
	}
	return nil
}

// ownThing returns the node's own Thing id for a PATCH or DELETE: 404 if
// there is none, 403 if only other publishers have one.
func (h *Handler) ownThing(r *http.Request, id string) (directory.Entry, *lmosproto.Problem) {
	if e, ok := h.deps.Directory.Get(h.deps.PeerID, id); ok {
		return e, nil
	}
	vis := h.visible(r)
	var others []string
	for _, e := range h.deps.Directory.Lookup(id) {
		if vis == nil || vis(e) {
			others = append(others, e.Publisher.String())
		}
	}
	if len(others) > 0 {
		return directory.Entry{}, &lmosproto.Problem{Status: http.StatusForbidden,
			Detail: fmt.Sprintf("thing %q is published by %s, not by this node; other publishers' Things are read-only", id, strings.Join(others, ", "))}
	}
	return directory.Entry{}, &lmosproto.Problem{Status: http.StatusNotFound, Detail: fmt.Sprintf("no thing %q published by this node", id)}
}

func (h *Handler) publish(ctx context.Context, td *lmosproto.TD, local *directory.Local) (directory.Entry, directory.Change, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.WriteTimeout)
	defer cancel()
	// The federation logs the publication, one line per publish.
	return h.deps.Publisher.Publish(ctx, td, local)
}

func (h *Handler) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.WriteTimeout)
	defer cancel()
	// The federation logs the removal.
	return h.deps.Publisher.Remove(ctx, id)
}

// writePublishError answers a failed Publish or Remove of thing id.
func (h *Handler) writePublishError(w http.ResponseWriter, r *http.Request, id string, err error) {
	h.writePublishErrorAt(w, r, id, "", err)
}

// writePublishErrorAt is writePublishError for a TD at JSON pointer prefix
// of the request body.
func (h *Handler) writePublishErrorAt(w http.ResponseWriter, r *http.Request, id, prefix string, err error) {
	var verrs lmosproto.ValidationErrors
	var verr lmosproto.ValidationError
	switch {
	case errors.As(err, &verrs), errors.As(err, &verr):
		httpapi.WriteProblem(w, r, invalidTD(fmt.Sprintf("thing %q", id), prefix, err))
	case errors.Is(err, directory.ErrStale):
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusConflict, Detail: fmt.Sprintf("thing %q: a newer version is already held: %v", id, err)})
	case errors.Is(err, directory.ErrClosed):
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusServiceUnavailable, Detail: fmt.Sprintf("thing %q: the directory is closed (the node is stopping)", id)})
	case errors.Is(err, context.DeadlineExceeded):
		httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusGatewayTimeout, Detail: fmt.Sprintf("thing %q: publishing did not finish within %s: %v", id, h.cfg.WriteTimeout, err)})
	default:
		h.writeInternal(w, r, "publish", id, err)
	}
}

func (h *Handler) writeInternal(w http.ResponseWriter, r *http.Request, op, id string, err error) {
	h.log.Error("tdd request failed", "op", op, "thing", id, "path", r.URL.Path, "err", err)
	httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusInternalServerError, Detail: fmt.Sprintf("%s thing %q: %v", op, id, err)})
}

// readTD reads, validates and parses a TD request body.
func readTD(w http.ResponseWriter, r *http.Request) (*lmosproto.TD, *lmosproto.Problem) {
	if p := checkContentType(r, ContentTypeTD, ContentTypeJSON, ContentTypeLDJSON); p != nil {
		return nil, p
	}
	body, p := readBody(w, r, lmosproto.MaxTDSize)
	if p != nil {
		return nil, p
	}
	td, p := parseTD("request body", "", body)
	if p != nil {
		return nil, p
	}
	if p := takeRegistration(td, ""); p != nil {
		return nil, p
	}
	return td, nil
}

// parseTD validates and parses a TD document; problems name their fields
// with prefix before the pointer.
func parseTD(what, prefix string, doc []byte) (*lmosproto.TD, *lmosproto.Problem) {
	if err := lmosproto.ValidateTD(doc); err != nil {
		return nil, invalidTD(what, prefix, err)
	}
	td, err := lmosproto.ParseTD(doc)
	if err != nil {
		return nil, invalidTD(what, prefix, err)
	}
	return td, nil
}

// checkContentType refuses a body of another media type, or none, with
// 415. Requiring a JSON media type also keeps web pages out: a browser sends
// a cross-origin POST without asking the server first (CORS preflight) only
// with a form or text/plain body, or with no Content-Type at all.
func checkContentType(r *http.Request, allowed ...string) *lmosproto.Problem {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil {
		for _, a := range allowed {
			if mt == a {
				return nil
			}
		}
	}
	return &lmosproto.Problem{Status: http.StatusUnsupportedMediaType,
		Detail: fmt.Sprintf("header Content-Type: %q: want %s", ct, strings.Join(allowed, " or "))}
}

// readBody reads a request body of at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *lmosproto.Problem) {
	return httpapi.ReadBody(w, r, limit)
}

// decodeJSON decodes one JSON value, keeping numbers as written.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// encodeJSON encodes v compactly without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
