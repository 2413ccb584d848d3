package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The imports' HTTP API, on the node's API behind its access guards:
//
//	GET    /api/v1/mcp/imports       → 200 [ImportInfo]
//	POST   /api/v1/mcp/imports       body Source → 201 ImportInfo (after the first connection attempt)
//	DELETE /api/v1/mcp/imports/{id}  → 204; the Things are withdrawn
const importsPath = "/api/v1/mcp/imports"

// ImportPatterns are the ServeMux patterns Handler serves.
func ImportPatterns() []string { return []string{importsPath, importsPath + "/{id}"} }

// Handler serves the imports' HTTP API.
func (im *Imports) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+importsPath, func(w http.ResponseWriter, _ *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, im.List())
	})
	mux.HandleFunc("POST "+importsPath, func(w http.ResponseWriter, r *http.Request) {
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
	mux.HandleFunc("DELETE "+importsPath+"/{id}", func(w http.ResponseWriter, r *http.Request) {
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

// ImportsClient talks to the imports' HTTP API of a node.
type ImportsClient struct {
	base string
	hc   *http.Client
}

// NewImportsClient returns the client of the node API at baseURL; hc
// carries the API token (httpapi.BearerClient), nil is
// http.DefaultClient.
func NewImportsClient(baseURL string, hc *http.Client) *ImportsClient {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &ImportsClient{base: baseURL, hc: hc}
}

// Add imports src.
func (c *ImportsClient) Add(ctx context.Context, src Source) (ImportInfo, error) {
	var info ImportInfo
	err := c.do(ctx, http.MethodPost, importsPath, src, &info)
	return info, err
}

// List lists the imports.
func (c *ImportsClient) List(ctx context.Context) ([]ImportInfo, error) {
	var infos []ImportInfo
	err := c.do(ctx, http.MethodGet, importsPath, nil, &infos)
	return infos, err
}

// Remove removes the import id.
func (c *ImportsClient) Remove(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, importsPath+"/"+id, nil, nil)
}

func (c *ImportsClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", lmosproto.ContentTypeJSON)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		p := &lmosproto.Problem{}
		if json.Unmarshal(data, p) != nil || p.Status == 0 {
			p = &lmosproto.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: string(data)}
		}
		return p
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}
