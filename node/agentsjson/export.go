package agentsjson

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

// maxSourceID bounds the title part of a source id.
const maxSourceID = 40

// renderDoc writes the node's agents.json: a source and its flows for
// each Thing the node may see that has an action or a readable property,
// the node's own first, then the others by id, as many as fit
// Config.MaxThings and Config.MaxBytes (the description says how many
// were left out).
func (h *Handler) renderDoc(w http.ResponseWriter, r *http.Request) {
	res, err := h.deps.Directory.Search(directory.Query{Visible: h.deps.Visible, ByID: true})
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "listing Things: %v", err))
		return
	}
	entries := ownFirst(res.Entries, h.deps.Self)
	doc := Doc{AgentsJSON: Version, Sources: []Source{}, Flows: []Flow{}, Info: Info{
		Title:   "lmosnode " + h.deps.Self.String(),
		Version: Version,
		Description: "The agents and tools LMOS node " + h.deps.Self.String() + " reaches, its own and other nodes' of the federation: " +
			"one source per Thing (the OpenAPI 3.1 document of its WoT HTTP binding on this node, also embedded as the source's openapi member), " +
			"one flow per action and per readable property.",
	}}
	size, listed, withAPI := 4<<10, 0, 0
	for _, e := range entries {
		src, flows, ok := h.thing(r, e)
		if !ok {
			continue
		}
		withAPI++
		n := len(mustJSON(src)) + len(mustJSON(flows))
		if listed == h.cfg.MaxThings || size+n > h.cfg.MaxBytes {
			continue // counted, left out
		}
		size += n
		listed++
		doc.Sources = append(doc.Sources, src)
		doc.Flows = append(doc.Flows, flows...)
	}
	if listed < withAPI {
		doc.Info.Description += fmt.Sprintf(" This document lists %d of the %d Things, the node's own first (it stays under %d Things and %d KiB); GET /things lists them all.",
			listed, withAPI, h.cfg.MaxThings, h.cfg.MaxBytes>>10)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "agents.json: %v", err))
		return
	}
	writeDoc(w, body)
}

// thing is the source and the flows of the Thing e for the client of r;
// false if it has none (no action nor readable property) or was removed.
func (h *Handler) thing(r *http.Request, e directory.Entry) (Source, []Flow, bool) {
	view, err := h.deps.ConsumerView(r, e)
	if err != nil {
		return Source{}, nil, false
	}
	id := SourceID(e.Publisher, e.ThingID, e.Title)
	api, err := describe(view, id)
	if err != nil || len(api.flows) == 0 {
		return Source{}, nil, false
	}
	desc := e.Title + " (Thing " + e.ThingID + " of " + e.Publisher.String() + ")"
	return Source{ID: id, Path: baseURL(r) + SourcePath(e.Publisher, e.ThingID), Description: desc, OpenAPI: mustJSON(api.openAPI)}, api.flows, true
}

// renderSource writes the OpenAPI document of one Thing.
func (h *Handler) renderSource(w http.ResponseWriter, r *http.Request) {
	pub, err := peer.Decode(r.PathValue("publisher"))
	id := r.PathValue("id")
	e, ok := h.deps.Directory.Get(pub, id)
	if err != nil || !ok || e.Tombstone || !h.deps.Visible(e) {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "no Thing %q of %s", id, r.PathValue("publisher")))
		return
	}
	src, _, ok := h.thing(r, e)
	if !ok {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s has no action or readable property", id, pub))
		return
	}
	writeDoc(w, src.OpenAPI)
}

func writeDoc(w http.ResponseWriter, body []byte) {
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// SourceID is the source id of the Thing id of publisher titled title:
// the title in snake_case (clipped) and a hash of publisher and id, so
// that it is unique in the document and stable.
func SourceID(publisher peer.ID, id, title string) string {
	sum := sha256.Sum256([]byte(publisher.String() + "\x00" + id))
	s := snake(title)
	if len(s) > maxSourceID {
		s = s[:maxSourceID]
	}
	return s + "_" + hex.EncodeToString(sum[:4])
}

// ownFirst orders entries with self's first, keeping their order
// otherwise.
func ownFirst(entries []directory.Entry, self peer.ID) []directory.Entry {
	out := make([]directory.Entry, 0, len(entries))
	for pass := range 2 {
		for _, e := range entries {
			if (e.Publisher == self) == (pass == 0) {
				out = append(out, e)
			}
		}
	}
	return out
}
