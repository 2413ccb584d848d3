package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The tools and resources every node offers besides the Things' actions.
const (
	// FindThings searches the directory.
	FindThings = "find_things"
	// ReadProperty reads a property of a Thing.
	ReadProperty = "read_property"
	// ThingURITemplate is the resource template of the Things' TDs; {id}
	// is the Thing id, percent-encoded.
	ThingURITemplate = "lmos://things/{+id}"
)

// FindInput is the input of find_things; every field is optional and
// they combine with AND.
type FindInput struct {
	Capability string `json:"capability,omitempty" jsonschema:"a capability id, optionally followed by @ and a semantic version range (weather-forecast@^1.2)"`
	Type       string `json:"type,omitempty" jsonschema:"agent, tool or another @type"`
	Vendor     string `json:"vendor,omitempty" jsonschema:"the vendor's name (case-insensitive)"`
	Text       string `json:"text,omitempty" jsonschema:"free text matched against titles, descriptions and capabilities, ranked by relevance"`
	Group      string `json:"group,omitempty" jsonschema:"a group id: only Things scoped to this group"`
	Publisher  string `json:"publisher,omitempty" jsonschema:"the publishing node's peer ID or did:key"`
	Limit      int    `json:"limit,omitempty" jsonschema:"at most this many results (default 20, at most 200)"`
}

// FoundThing is one result of find_things.
type FoundThing struct {
	ID           string            `json:"id"`
	Title        string            `json:"title"`
	Types        []string          `json:"types"`
	Publisher    string            `json:"publisher"`
	Organization *did.Organization `json:"organization,omitempty" jsonschema:"the organisation the publisher claims (lmos:organization): its domain is the publisher's only when verified is true"`
	Own          bool              `json:"own,omitempty" jsonschema:"published by this node"`
	Vendor       string            `json:"vendor,omitempty"`
	Capabilities []FoundCap        `json:"capabilities,omitempty"`
	Groups       []string          `json:"groups,omitempty"`
	Tools        []string          `json:"tools,omitempty" jsonschema:"the MCP tools of the Thing's actions"`
	Resource     string            `json:"resource" jsonschema:"the URI of the Thing's description (resources/read)"`
	Expires      string            `json:"expires,omitempty" jsonschema:"when this node drops the Thing unless its publisher announces it again (RFC 3339); absent for own Things"`
	Properties   []string          `json:"properties,omitempty" jsonschema:"the properties read_property can read"`
	Score        float64           `json:"score,omitempty"`
}

// FoundCap is a capability of a FoundThing.
type FoundCap struct {
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
}

// FindOutput is the output of find_things.
type FindOutput struct {
	Things []FoundThing `json:"things"`
	Total  int          `json:"total" jsonschema:"the number of matching Things, all pages together"`
}

// ReadInput is the input of read_property.
type ReadInput struct {
	Thing     string `json:"thing" jsonschema:"the Thing id"`
	Publisher string `json:"publisher,omitempty" jsonschema:"the publisher's peer ID, when several publish the id"`
	Property  string `json:"property" jsonschema:"the property name"`
}

// ReadOutput is the output of read_property.
type ReadOutput struct {
	Value any `json:"value"`
}

func (s *Server) addFixedTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        FindThings,
		Title:       "Find agents and tools",
		Description: "Searches the LMOS federation's directory as this node sees it. Returns the Things found, each with the MCP tool names of its actions.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.findThings)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        ReadProperty,
		Title:       "Read a property of a Thing",
		Description: "Reads the current value of a property of an LMOS Thing (agent or tool), on this node or on another.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		// Written out: the schema inferred for any is the boolean schema
		// true, which clients that read schemas as objects refuse.
		OutputSchema: map[string]any{"type": "object", "required": []any{"value"},
			"properties": map[string]any{"value": map[string]any{"description": "the property's value, as its data schema describes"}}},
	}, s.readProperty)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "thing",
		Title:       "Thing Description",
		Description: "The signed W3C WoT Thing Description of an LMOS Thing; {id} is the Thing id, percent-encoded.",
		MIMEType:    "application/td+json",
		URITemplate: ThingURITemplate,
	}, s.readThing)
}

const (
	defaultFindLimit = 20
	maxFindLimit     = 200
)

func (s *Server) findThings(_ context.Context, _ *mcp.CallToolRequest, in FindInput) (*mcp.CallToolResult, FindOutput, error) {
	q := directory.Query{Capability: in.Capability, Type: in.Type, Vendor: in.Vendor, Text: in.Text, Group: in.Group,
		Visible: s.deps.Visible, Limit: defaultFindLimit}
	if in.Limit > 0 {
		q.Limit = min(in.Limit, maxFindLimit)
	}
	if in.Publisher != "" {
		p, err := lmosproto.ParsePublisher(in.Publisher)
		if err != nil {
			return nil, FindOutput{}, fmt.Errorf("publisher: %w", err)
		}
		q.Publisher = p
	}
	res, err := s.deps.Directory.Search(q)
	if err != nil {
		return nil, FindOutput{}, err
	}
	s.admit(res.Entries)
	out := FindOutput{Things: make([]FoundThing, 0, len(res.Entries)), Total: res.Total}
	for _, e := range res.Entries {
		out.Things = append(out.Things, s.found(e))
	}
	return nil, out, nil
}

func (s *Server) found(e directory.Entry) FoundThing {
	f := FoundThing{ID: e.ThingID, Title: e.Title, Types: e.Types, Publisher: e.Publisher.String(), Own: e.Own,
		Vendor: e.Vendor, Groups: e.Groups, Tools: s.ToolNames(e.Publisher, e.ThingID), Resource: ThingURI(e.ThingID), Score: e.Score}
	for _, c := range e.Capabilities {
		f.Capabilities = append(f.Capabilities, FoundCap{ID: c.ID, Version: c.Version})
	}
	if !e.Expires.IsZero() {
		f.Expires = e.Expires.UTC().Format("2006-01-02T15:04:05Z")
	}
	if td, err := s.tds.TD(e); err == nil {
		if s.deps.Orgs != nil {
			f.Organization = s.deps.Orgs.Of(e.Publisher, td.Organization())
		}
		for name := range td.Properties {
			f.Properties = append(f.Properties, name)
		}
		slices.Sort(f.Properties)
	}
	return f
}

// ThingURI is the resource URI of Thing id's TD.
func ThingURI(id string) string { return "lmos://things/" + url.PathEscape(id) }

func (s *Server) readProperty(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, ReadOutput, error) {
	var pub peer.ID
	if in.Publisher != "" {
		p, err := lmosproto.ParsePublisher(in.Publisher)
		if err != nil {
			return nil, ReadOutput{}, fmt.Errorf("publisher: %w", err)
		}
		pub = p
	}
	e, err := s.deps.Resolver.Resolve(ctx, in.Thing, pub, true)
	if err != nil {
		return toolError(asProblem(err)), ReadOutput{}, nil
	}
	m := lmosproto.NewMessage(e.ThingID, lmosproto.MsgReadProperty)
	m.Name = in.Property
	r, p := s.exchange(ctx, e, m, nil)
	if p != nil {
		return toolError(p), ReadOutput{}, nil
	}
	if r == nil {
		return nil, ReadOutput{}, ctx.Err()
	}
	var v any
	if err := r.Value.Decode(&v); err != nil {
		return nil, ReadOutput{}, fmt.Errorf("property %q: %w", in.Property, err)
	}
	return nil, ReadOutput{Value: v}, nil
}

// readThing serves resources/read of lmos://things/{id}: the signed TD as
// published, resolved with the node's rule (its own Thing first, else the
// one publisher of the id).
func (s *Server) readThing(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, "lmos://things/")
	if !ok || rest == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id, err := url.PathUnescape(rest)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	e, err := s.deps.Resolver.Resolve(ctx, id, "", false)
	if err != nil {
		var p *lmosproto.Problem
		if errors.As(err, &p) && p.Status == http.StatusNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	raw, err := e.Raw()
	if err != nil {
		return nil, fmt.Errorf("thing %q: %w", id, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/td+json", Text: string(raw)}}}, nil
}
