package anp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ImportRequest is the body of POST PathImports.
type ImportRequest struct {
	// URL is the agent description's URL.
	URL string `json:"url"`
}

// ImportResult is the answer of an import: the Thing published.
type ImportResult struct {
	ThingID   string   `json:"thingId"`
	Publisher string   `json:"publisher"`
	Seq       uint64   `json:"seq"`
	Endpoint  string   `json:"endpoint"`
	Methods   []string `json:"methods"`
}

// Import reads the agent description at req.URL and its JSON-RPC
// (openrpc) interface, and publishes an lmos:Agent for it whose actions
// are the interface's methods, served by this node (backend kind
// KindANP): calls go to the agent signed with the node's did:wba.
// Importing the same URL again publishes the next version of the same
// Thing.
func (s *Server) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	im, err := s.deps.Client.read(ctx, req.URL)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusBadGateway, "%v", err)
	}
	td, err := tdOf(im, req.URL)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	s.deps.Client.mu.Lock()
	s.deps.Client.agents[req.URL] = im // calls use what was just read
	s.deps.Client.mu.Unlock()
	e, _, err := s.deps.Publisher.Publish(ctx, td, &directory.Local{Backend: req.URL, Kind: KindANP})
	if err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{ThingID: e.ThingID, Publisher: e.Publisher.String(), Seq: e.Seq, Endpoint: im.endpoint}
	for name := range im.methods {
		res.Methods = append(res.Methods, name)
	}
	slices.Sort(res.Methods)
	return res, nil
}

// tdOf is the TD of an imported agent.
func tdOf(im *imported, adURL string) (*lmosproto.TD, error) {
	td := &lmosproto.TD{
		Context:             lmosproto.LMOSContext(),
		Types:               []string{lmosproto.TypeAgent},
		ID:                  "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(adURL)).String(),
		Title:               im.ad.Name,
		Description:         im.ad.Description,
		Links:               []lmosproto.Link{{Href: adURL, Rel: "describedby", Type: "application/json"}},
		SecurityDefinitions: map[string]json.RawMessage{"nosec_sc": json.RawMessage(`{"scheme":"nosec"}`)},
		Security:            []string{"nosec_sc"},
		Actions:             map[string]*lmosproto.ActionAffordance{},
	}
	if im.ad.Owner != nil && im.ad.Owner.Name != "" {
		td.Metadata = &lmosproto.Metadata{Vendor: &lmosproto.Vendor{Name: im.ad.Owner.Name, URL: im.ad.Owner.URL}}
	}
	for name, m := range im.methods {
		a := &lmosproto.ActionAffordance{Title: m.Summary, Description: m.Description,
			Forms: []lmosproto.Form{{Href: im.endpoint, Op: []string{"invokeaction"}, ContentType: "application/json"}},
			Input: inputSchema(m)}
		if m.Result != nil && usable(m.Result.Schema) {
			a.Output = m.Result.Schema
		}
		td.Actions[name] = a
	}
	if err := td.Validate(); err != nil {
		return nil, fmt.Errorf("anp: the TD of %s: %w", adURL, err)
	}
	return td, nil
}

// inputSchema is the action input of m: an object of its by-name params.
func inputSchema(m RPCMethod) json.RawMessage {
	props := map[string]json.RawMessage{}
	required := []string{}
	for _, p := range m.Params {
		schema := json.RawMessage(`{}`)
		if usable(p.Schema) {
			schema = p.Schema
		}
		props[p.Name] = schema
		if p.Required {
			required = append(required, p.Name)
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required}) // valid JSON parts
	return b
}

// usable reports whether schema can stand alone in a TD: a JSON object
// with no $ref into the OpenRPC document's components.
func usable(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) > 0 && s[0] == '{' && json.Valid(s) && !strings.Contains(string(s), `"$ref"`)
}

// serveImport serves POST PathImports.
func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	b, p := httpapi.ReadBody(w, r, 64<<10)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	var req ImportRequest
	if err := json.Unmarshal(b, &req); err != nil || req.URL == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: want {\"url\": \"<agent description URL>\"}"))
		return
	}
	res, err := s.Import(r.Context(), req)
	if err != nil {
		httpapi.WriteProblem(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, res)
}
