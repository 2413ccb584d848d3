package mcpbridge

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// ImportsPath is the root of the imports' HTTP API, on the node's API
// behind its access guards:
//
//	GET    /api/v1/mcp/imports       → 200 [ImportInfo]
//	POST   /api/v1/mcp/imports       body Source → 201 ImportInfo (after the first connection attempt)
//	DELETE /api/v1/mcp/imports/{id}  → 204; the Things are withdrawn
const ImportsPath = "/api/v1/mcp/imports"

// ImportPatterns are the ServeMux patterns Handler serves.
func ImportPatterns() []string { return []string{ImportsPath, ImportsPath + "/{id}"} }

// Handler serves the imports' HTTP API.
func (im *Imports) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ImportsPath, func(w http.ResponseWriter, _ *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, im.List())
	})
	mux.HandleFunc("POST "+ImportsPath, func(w http.ResponseWriter, r *http.Request) {
		var src Source
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&src); err != nil {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: %v", err))
			return
		}
		if err := src.Validate(); err != nil {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: %v", err))
			return
		}
		info, err := im.Add(r.Context(), src)
		if err != nil {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "%v", err))
			return
		}
		httpapi.WriteJSON(w, http.StatusCreated, info)
	})
	mux.HandleFunc("DELETE "+ImportsPath+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		err := im.Remove(r.Context(), r.PathValue("id"))
		switch {
		case errors.Is(err, ErrNoImport):
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "%v", err))
		case err != nil:
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "%v", err))
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	return mux
}
