package aicatalog

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Bounds of an import.
const (
	// MaxImportBytes bounds an imported catalog, MaxArtifactBytes an
	// artifact (a card) it points at.
	MaxImportBytes   = 4 << 20
	MaxArtifactBytes = 1 << 20
	// MaxImportEntries bounds the entries one import reads.
	MaxImportEntries = 256
	// maxRedirects bounds the redirects of a fetch (each to the same host).
	maxRedirects = 5
)

// ImportRequest is the body of POST /api/v1/ai-catalog/imports.
type ImportRequest struct {
	// URL is the catalog's URL.
	URL string `json:"url"`
	// AllowUnverified imports the entries without a trust manifest that
	// verifies too (their result says trust "unverified"); else they are
	// refused.
	AllowUnverified bool `json:"allowUnverified,omitempty"`
}

// ImportResult is the answer of an import: one result per entry.
type ImportResult struct {
	Entries []EntryResult `json:"entries"`
}

// EntryResult is what the import did with one entry.
type EntryResult struct {
	Identifier string `json:"identifier"`
	Type       string `json:"type"`
	// Trust is "verified" (a manifest verified, Signer is its signer) or
	// "unverified" (Problem says why).
	Trust  string `json:"trust"`
	Signer string `json:"signer,omitempty"`
	// Status is "imported", "refused" (unverified) or "skipped" (a type
	// the node does not import, or the import failed: Problem).
	Status  string `json:"status"`
	Problem string `json:"problem,omitempty"`
	// Imported is the A2A or MCP import's answer.
	Imported any `json:"imported,omitempty"`
}

// Entry statuses and trust of an EntryResult.
const (
	StatusImported   = "imported"
	StatusRefused    = "refused"
	StatusSkipped    = "skipped"
	TrustVerified    = "verified"
	TrustUnverified  = "unverified"
	statusNotAllowed = "the entry's trust manifests do not verify; import it anyway with allowUnverified (--allow-unverified)"
)

func (h *Handler) serveImport(w http.ResponseWriter, r *http.Request) {
	if h.deps.ImportA2A == nil || h.deps.ImportMCP == nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotImplemented, "this node does not import AI Catalogs"))
		return
	}
	var req ImportRequest
	body, p := httpapi.ReadBody(w, r, maxSearchBody)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: %v", err))
		return
	}
	res, err := h.Import(r.Context(), req)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusBadGateway, "%v", err)
		}
		httpapi.WriteProblem(w, r, p)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Import fetches the catalog at req.URL and imports its entries: an A2A
// card entry through the A2A import, an MCP Server Card entry's
// streamable-http remote through the MCP import. Each entry's trust
// manifests are verified (VerifyManifest) against the artifact fetched
// from its url (or its inline data); an entry none of whose manifests
// verifies is refused unless req.AllowUnverified. Other types are
// skipped, as are nested catalogs (not followed).
func (h *Handler) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	if !strings.HasPrefix(req.URL, "http://") && !strings.HasPrefix(req.URL, "https://") {
		return ImportResult{}, httpapi.Problemf(http.StatusBadRequest, "url %q is not an http(s) URL", req.URL)
	}
	raw, err := h.fetch(ctx, req.URL, MaxImportBytes)
	if err != nil {
		return ImportResult{}, err
	}
	var cat Catalog
	if err := json.Unmarshal(raw, &cat); err != nil || cat.SpecVersion == "" {
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "%s is not an AI Catalog (%v)", req.URL, err)
	}
	res := ImportResult{Entries: []EntryResult{}}
	for i := range cat.Entries[:min(len(cat.Entries), MaxImportEntries)] {
		res.Entries = append(res.Entries, h.importEntry(ctx, &cat.Entries[i], req.AllowUnverified))
	}
	return res, nil
}

// importEntry imports one entry.
func (h *Handler) importEntry(ctx context.Context, e *Entry, allow bool) EntryResult {
	out := EntryResult{Identifier: e.Identifier, Type: e.Type, Trust: TrustUnverified}
	if e.Type != TypeA2ACard && e.Type != TypeServerCard {
		out.Status, out.Problem = StatusSkipped, "the node imports "+TypeA2ACard+" and "+TypeServerCard+" entries"
		return out
	}
	artifact, err := h.artifact(ctx, e)
	if err != nil {
		out.Status, out.Problem = StatusSkipped, err.Error()
		return out
	}
	var key ed25519.PublicKey
	out.Signer, out.Problem = h.verifyEntry(e, artifact)
	if out.Signer != "" {
		out.Trust, out.Problem = TrustVerified, ""
		key, _ = lmosproto.ParseDIDKey(out.Signer)
	} else if !allow {
		out.Status, out.Problem = StatusRefused, statusNotAllowed+": "+out.Problem
		return out
	}
	var imported any
	switch e.Type {
	case TypeA2ACard:
		if e.URL == "" {
			err = errors.New("an inline A2A card is not imported: the A2A import reads a card URL")
			break
		}
		verified := out.Trust == TrustVerified
		a := A2AImport{Card: e.URL, Key: key, AllowUnsigned: verified || allow}
		if verified {
			a.Digest = Digest(artifact)
		}
		imported, err = h.deps.ImportA2A(ctx, a)
	case TypeServerCard:
		var endpoint string
		if endpoint, err = streamableRemote(artifact); err == nil {
			imported, err = h.deps.ImportMCP(ctx, endpoint)
		}
	}
	if err != nil {
		out.Status, out.Problem = StatusSkipped, err.Error()
		return out
	}
	out.Status, out.Imported = StatusImported, imported
	return out
}

// verifyEntry returns the signer of the first of e's manifests that
// verifies over artifact, or why none does.
func (h *Handler) verifyEntry(e *Entry, artifact []byte) (signer, problem string) {
	if len(e.TrustManifests) == 0 {
		return "", "no trust manifest"
	}
	digest := Digest(artifact)
	var problems []string
	for _, m := range e.TrustManifests {
		s, err := VerifyManifest(m, e, digest, h.now())
		if err == nil {
			return s, ""
		}
		problems = append(problems, err.Error())
	}
	return "", strings.Join(problems, "; ")
}

// artifact returns the bytes an entry's digest covers: those fetched
// from its url, or the JCS form of its data.
func (h *Handler) artifact(ctx context.Context, e *Entry) ([]byte, error) {
	if len(e.Data) > 0 {
		return lmosproto.Canonicalize(e.Data)
	}
	if !strings.HasPrefix(e.URL, "http://") && !strings.HasPrefix(e.URL, "https://") {
		return nil, fmt.Errorf("url %q is not an http(s) URL", e.URL)
	}
	return h.fetch(ctx, e.URL, MaxArtifactBytes)
}

// streamableRemote is the streamable-http remote of a Server Card.
func streamableRemote(card []byte) (string, error) {
	var c struct {
		Remotes []struct{ Type, URL string } `json:"remotes"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return "", fmt.Errorf("server card: %w", err)
	}
	for _, r := range c.Remotes {
		if r.Type == "streamable-http" && (strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) && !strings.Contains(r.URL, "{") {
			return r.URL, nil
		}
	}
	return "", errors.New("the server card has no streamable-http remote with a plain URL")
}

// fetch GETs u within FetchTimeout and at most limit bytes.
func (h *Handler) fetch(ctx context.Context, u string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, httpapi.Problemf(http.StatusBadRequest, "%s: %v", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: longer than %d bytes", u, limit)
	}
	return b, nil
}

// sameHostClient is c (or a new client) that follows a redirect only to
// the scheme and host of the request's first URL, at most maxRedirects.
func sameHostClient(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	out.CheckRedirect = httpapi.SameOriginRedirects(maxRedirects)
	return out
}
