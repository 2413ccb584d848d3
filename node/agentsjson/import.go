package agentsjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// importTimeout bounds an import: the document, its sources, the
// publications.
const importTimeout = 60 * time.Second

// maxImportBody bounds the body of POST PathImports.
const maxImportBody = 64 << 10

// maxFlows bounds the Tools one import publishes.
const maxFlows = 256

// ActionRun is the one action of an imported Tool: it runs the flow.
const ActionRun = "run"

// parameterTypes are the flow parameter types that carry over into the
// Tool's input schema.
var parameterTypes = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// ImportRequest is the body of POST /api/v1/agentsjson/imports.
type ImportRequest struct {
	// URL is the URL of the agents.json document.
	URL string `json:"url"`
}

// ImportResult is the answer of POST /api/v1/agentsjson/imports.
type ImportResult struct {
	// Tools are the lmos:Tools published, one per flow.
	Tools []ImportedTool `json:"tools"`
	// Skipped are the flows that were not published, with the reason.
	Skipped []SkippedFlow `json:"skipped,omitempty"`
}

// ImportedTool is the Tool published for one flow.
type ImportedTool struct {
	Flow      string `json:"flow"`
	ThingID   string `json:"thingId"`
	Publisher string `json:"publisher"`
	Seq       uint64 `json:"seq"`
	// Operations are the calls the flow makes ("POST https://…/search").
	Operations []string `json:"operations"`
}

// SkippedFlow is a flow an import did not publish.
type SkippedFlow struct {
	Flow   string `json:"flow"`
	Reason string `json:"reason"`
}

// Import reads the agents.json at req.URL and publishes one lmos:Tool
// per flow whose operations it finds in the sources' OpenAPI documents
// (backend kind KindAgentsJSON: calls run the flow against the API).
// Importing the same URL again publishes the next version of the same
// Things. At most 256 flows are imported.
func (h *Handler) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	u, err := url.Parse(req.URL)
	if err != nil || !httpURL(req.URL) || u.Host == "" {
		return ImportResult{}, httpapi.Problemf(http.StatusBadRequest, "url: %q is not an http(s) URL", req.URL)
	}
	u.Fragment, u.RawFragment = "", "" // the backend URL's fragment names the flow
	req.URL = u.String()
	c := h.deps.Client
	doc, err := c.readDoc(ctx, req.URL)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusBadGateway, "%v", err)
	}
	res := ImportResult{Tools: []ImportedTool{}}
	for i, f := range doc.Flows {
		if i == maxFlows {
			res.Skipped = append(res.Skipped, SkippedFlow{Flow: f.ID, Reason: fmt.Sprintf("an import takes the first %d flows", maxFlows)})
			continue
		}
		p, err := c.resolve(ctx, req.URL, doc, f)
		if err == nil && f.ID == "" {
			err = errors.New("the flow has no id")
		}
		var td *lmosproto.TD
		if err == nil {
			td, err = toolTD(req.URL, p)
		}
		if err != nil {
			res.Skipped = append(res.Skipped, SkippedFlow{Flow: f.ID, Reason: err.Error()})
			continue
		}
		backend := req.URL + "#" + f.ID
		c.remember(backend, p) // calls use the plan just resolved
		e, _, err := h.deps.Publisher.Publish(ctx, td, &directory.Local{Backend: backend, Kind: KindAgentsJSON})
		if err != nil {
			return res, err
		}
		t := ImportedTool{Flow: f.ID, ThingID: e.ThingID, Publisher: e.Publisher.String(), Seq: e.Seq}
		for _, s := range p.steps {
			t.Operations = append(t.Operations, s.method+" "+s.url)
		}
		res.Tools = append(res.Tools, t)
	}
	h.log.Info("agents.json imported", "url", req.URL, "tools", len(res.Tools), "skipped", len(res.Skipped))
	return res, nil
}

// toolTD is the TD of the Tool of plan p, read from the agents.json at
// docURL: the flow's title and description, its id as capability, one
// action "run" whose input is {"parameters": {…}, "requestBody": …} as
// the flow's fields say and whose form is the first operation's.
func toolTD(docURL string, p *plan) (*lmosproto.TD, error) {
	f := p.flow
	props, required := obj{}, []any{}
	for _, fp := range f.Fields.Parameters {
		s := obj{}
		if slices.Contains(parameterTypes, fp.Type) {
			s["type"] = fp.Type
		}
		if fp.Description != "" {
			s["description"] = fp.Description
		}
		props[fp.Name] = s
		if fp.Required {
			required = append(required, fp.Name)
		}
	}
	input := obj{"type": "object", "properties": obj{"parameters": obj{"type": "object", "properties": props, "required": required}}}
	if len(required) > 0 {
		input["required"] = []any{"parameters"}
	}
	if rb := f.Fields.RequestBody; rb != nil {
		if mt, ok := rb.Content["application/json"]; ok && len(mt.Schema) > 0 {
			var s any
			_ = json.Unmarshal(mt.Schema, &s)
			input["properties"].(obj)["requestBody"] = s
		} else {
			input["properties"].(obj)["requestBody"] = obj{}
		}
	}
	first := p.steps[0]
	desc := f.Description
	if desc == "" {
		desc = f.Title
	}
	td := &lmosproto.TD{
		Context:             lmosproto.LMOSContext(),
		Types:               []string{lmosproto.TypeTool},
		ID:                  "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(docURL+"#"+f.ID)).String(),
		Title:               f.Title,
		Description:         desc,
		Links:               []lmosproto.Link{{Href: docURL, Rel: "describedby", Type: "application/json"}},
		SecurityDefinitions: map[string]json.RawMessage{"nosec_sc": json.RawMessage(`{"scheme":"nosec"}`)},
		Security:            []string{"nosec_sc"},
		Capabilities:        []lmosproto.Capability{{ID: f.ID, Description: desc}},
		Actions: map[string]*lmosproto.ActionAffordance{ActionRun: {
			Title:       f.Title,
			Description: "Runs the agents.json flow " + f.ID + ": input {\"parameters\": {…}, \"requestBody\": …} as the flow's fields; the output is the last operation's answer.",
			Input:       mustJSON(input),
			Forms: []lmosproto.Form{{Href: first.url, Op: []string{"invokeaction"}, ContentType: "application/json",
				Extra: map[string]json.RawMessage{"htv:methodName": mustJSON(first.method)}}},
		}},
	}
	if td.Title == "" {
		td.Title = f.ID
	}
	if err := td.Validate(); err != nil {
		return nil, fmt.Errorf("the Tool's TD: %w", err)
	}
	return td, nil
}

// serveImport serves POST PathImports.
func (h *Handler) serveImport(w http.ResponseWriter, r *http.Request) {
	var req ImportRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxImportBody)).Decode(&req); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: %v", err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), importTimeout)
	defer cancel()
	res, err := h.Import(ctx, req)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusBadGateway, "importing %s: %v", req.URL, err)
		}
		httpapi.WriteProblem(w, r, p)
		return
	}
	if len(res.Tools) == 0 {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusUnprocessableEntity, "%s: no flow could be imported: %s", req.URL, skippedText(res.Skipped)))
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, res)
}

func skippedText(s []SkippedFlow) string {
	out := ""
	for i, f := range s {
		if i > 0 {
			out += "; "
		}
		out += f.Flow + ": " + f.Reason
	}
	if out == "" {
		out = "the document has no flow"
	}
	return out
}
