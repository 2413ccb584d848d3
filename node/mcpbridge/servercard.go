package mcpbridge

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// The node's MCP Server Card (SEP 2127): what an MCP client needs to
// connect to the node's endpoint before it connects — its name, version,
// transport and protocol revisions. The card does not enumerate tools
// (the schema leaves them to tools/list); the AI Catalog lists them as the
// catalog entry's capabilities (package aicatalog).
const (
	// PathServerCard is where the node serves its card. PathServerCardMCP
	// is the location SEP 2127 recommends, the endpoint's URL followed by
	// /server-card; both serve the same card.
	PathServerCard    = "/.well-known/mcp/server-card.json"
	PathServerCardMCP = "/mcp/server-card"
	// ServerCardSchema is the card's $schema.
	ServerCardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// MediaTypeServerCard is the card's media type.
	MediaTypeServerCard = "application/mcp-server-card+json"
	// firstStreamable is the first protocol revision of the Streamable
	// HTTP transport: the endpoint serves it and every later one the SDK
	// supports (handler.go).
	firstStreamable = "2025-03-26"
)

// ServerCard is an MCP Server Card (mcp-server-card schema.json,
// $defs/ServerCard).
type ServerCard struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description"`
	Version     string         `json:"version"`
	WebsiteURL  string         `json:"websiteUrl,omitempty"`
	Remotes     []Remote       `json:"remotes"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// Remote is a remote endpoint of a ServerCard.
type Remote struct {
	Type                      string          `json:"type"`
	URL                       string          `json:"url"`
	SupportedProtocolVersions []string        `json:"supportedProtocolVersions"`
	Headers                   []KeyValueInput `json:"headers,omitempty"`
}

// KeyValueInput is a header a Remote takes.
type KeyValueInput struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
	Value       string `json:"value,omitempty"`
}

// ProtocolRevisions are the MCP revisions the endpoint speaks, newest
// first: 2026-07-28 (stateless) and the session revisions of Streamable
// HTTP back to 2025-03-26 (handler.go).
func ProtocolRevisions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v < firstStreamable })
}

// ServerCard returns the card of the node's MCP endpoint, reached at base
// (an http(s) URL without a trailing slash) + mcpPath.
func (s *Server) ServerCard(base, mcpPath string) ServerCard {
	self := s.deps.Self.String()
	r := Remote{Type: "streamable-http", URL: base + mcpPath, SupportedProtocolVersions: ProtocolRevisions()}
	if s.cfg.BearerAuth {
		r.Headers = []KeyValueInput{{Name: "Authorization", Description: "The node's API token: Bearer <token> (lmosnode config apiToken)",
			IsRequired: true, IsSecret: true, Value: "Bearer {token}"}}
	}
	return ServerCard{
		Schema:      ServerCardSchema,
		Name:        "io.lmosnode/node-" + self,
		Title:       "LMOS node " + self[max(0, len(self)-8):],
		Description: "The agents and tools of an LMOS federation as MCP tools, with find_things and read_property.",
		Version:     Version,
		Remotes:     []Remote{r},
		Meta:        map[string]any{"io.lmosnode/peerId": self, "io.lmosnode/tools": []string{FindThings, ReadProperty}},
	}
}

// ServerCardHandler serves the card (PathServerCard, PathServerCardMCP),
// the MCP endpoint at mcpPath, rendered once per base URL
// (httpapi.DocCache: ETag and 304).
func (s *Server) ServerCardHandler(mcpPath string) http.Handler {
	docs := httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 8})
	return docs.Handler(func(r *http.Request) (string, string, bool) {
		return httpapi.BaseURL(r), strconv.FormatBool(s.cfg.BearerAuth), true
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, s.ServerCard(httpapi.BaseURL(r), mcpPath))
	}))
}
