package anp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes of the ANP documents on the node's API (docs/api.md).
const (
	// PathDescriptions is the discovery collection (ANP-08).
	PathDescriptions = "/.well-known/agent-descriptions"
	// PathAgents is the root of the per-Thing agent descriptions:
	// PathAgents/{publisher}/{id}/ad.json.
	PathAgents = "/anp/agents"
	// PathImports is where `lmosnode anp import` posts a description URL.
	PathImports = "/api/v1/anp/imports"
)

// Bounds of the collection: a page lists at most MaxPage descriptions
// (query parameters offset and limit, default DefaultPage) and at most
// MaxPageBytes bytes; its next link continues it.
const (
	DefaultPage  = 100
	MaxPage      = 1000
	MaxPageBytes = 256 << 10
)

// DescriptionPath is the path of the agent description of the Thing id of
// publisher.
func DescriptionPath(publisher peer.ID, id string) string {
	return PathAgents + "/" + url.PathEscape(publisher.String()) + "/" + url.PathEscape(id) + "/ad.json"
}

// adContext is the JSON-LD context of ANP's descriptions (ANP-08).
var adContext = map[string]string{
	"@vocab": "https://schema.org/",
	"did":    "https://w3id.org/did#",
	"ad":     "https://agent-network-protocol.com/ad#",
}

// AgentDescription is an ANP-07 agent description, the members lmosnode
// writes and reads.
type AgentDescription struct {
	Context             map[string]string         `json:"@context,omitempty"`
	LDType              string                    `json:"@type,omitempty"`
	LDID                string                    `json:"@id,omitempty"`
	ProtocolType        string                    `json:"protocolType,omitempty"`
	ProtocolVersion     string                    `json:"protocolVersion,omitempty"`
	Type                string                    `json:"type,omitempty"`
	URL                 string                    `json:"url,omitempty"`
	Name                string                    `json:"name"`
	DID                 string                    `json:"did,omitempty"`
	Owner               *Owner                    `json:"owner,omitempty"`
	Description         string                    `json:"description,omitempty"`
	Created             string                    `json:"created,omitempty"`
	SecurityDefinitions map[string]SecurityScheme `json:"securityDefinitions,omitempty"`
	Security            string                    `json:"security,omitempty"`
	Interfaces          []Interface               `json:"interfaces,omitempty"`
	// The JSON-LD form of ANP's examples (ad:interfaces, ad:security…).
	LDInterfaces []Interface `json:"ad:interfaces,omitempty"`
}

// Owner is the owner of an agent.
type Owner struct {
	Type string `json:"type,omitempty"`
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// SecurityScheme is a securityDefinitions entry.
type SecurityScheme struct {
	Scheme string `json:"scheme"`
	In     string `json:"in"`
	Name   string `json:"name"`
}

// Interface is an interface of an agent (ANP-07 "Interface Object").
type Interface struct {
	Type        string          `json:"type,omitempty"`
	LDType      string          `json:"@type,omitempty"`
	Protocol    string          `json:"protocol"`
	Version     string          `json:"version,omitempty"`
	URL         string          `json:"url,omitempty"`
	Description string          `json:"description,omitempty"`
	Content     json.RawMessage `json:"content,omitempty"`
}

// didwbaScheme is the one security scheme lmosnode's descriptions name.
var didwbaScheme = map[string]SecurityScheme{"didwba_sc": {Scheme: "didwba", In: "header", Name: "Authorization"}}

// describe builds the description of the Thing td of e, served from base.
func (s *Server) describe(base string, e directory.Entry, td *lmosproto.TD) AgentDescription {
	u := base + DescriptionPath(e.Publisher, e.ThingID)
	q := "?publisher=" + url.QueryEscape(e.Publisher.String())
	ad := AgentDescription{
		Context: adContext, LDType: "ad:AgentDescription", LDID: u,
		ProtocolType: "ANP", ProtocolVersion: "1.0.0", Type: "AgentDescription", URL: u,
		Name: td.Title, Description: td.Description, Created: e.Signed.UTC().Format(time.RFC3339),
		SecurityDefinitions: didwbaScheme, Security: "didwba_sc",
		Interfaces: []Interface{{
			Type: "StructuredInterface", Protocol: "WoT-TD", Version: "1.1",
			URL:         base + "/things/" + url.PathEscape(e.ThingID) + "/td" + q,
			Description: "W3C WoT Thing Description whose forms are this node's HTTP binding (actions: POST, properties: GET/PUT, events: SSE).",
		}, {
			Type: "StructuredInterface", Protocol: "MCP", URL: base + "/mcp",
			Description: "MCP Streamable HTTP endpoint of the node; each action of this Thing is a tool. It takes the node's API token, not DID-WBA.",
		}},
	}
	if s.deps.Identity != nil && e.Own {
		ad.DID = s.deps.Identity.DID
	}
	if td.IsAgent() {
		ad.Interfaces = append(ad.Interfaces, Interface{Type: "NaturalLanguageInterface", Protocol: "A2A", Version: "1.0",
			URL:         base + "/a2a/" + url.PathEscape(e.Publisher.String()) + "/" + url.PathEscape(e.ThingID) + "/.well-known/agent-card.json",
			Description: "A2A agent card; messages invoke the agent's actions."})
	}
	if td.Metadata != nil && td.Metadata.Vendor != nil && td.Metadata.Vendor.Name != "" {
		ad.Owner = &Owner{Type: "Organization", Name: td.Metadata.Vendor.Name, URL: td.Metadata.Vendor.URL}
	}
	if ad.Description == "" {
		ad.Description = td.Title
	}
	return ad
}

// visibility is what the caller of r may see: the owner's view, or a
// DID caller's (own.VisibleTo).
func (s *Server) visibility(r *http.Request) (func(directory.Entry) bool, string) {
	if c, ok := interact.DIDCallerFrom(r.Context()); ok {
		return s.deps.VisibleTo(c), c.Peer.String()
	}
	return s.deps.Visible, "owner"
}

// serveDescription serves GET PathAgents/{publisher}/{id}/ad.json.
func (s *Server) serveDescription(w http.ResponseWriter, r *http.Request) {
	pub, err := peer.Decode(r.PathValue("publisher"))
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "publisher %q: %v", r.PathValue("publisher"), err))
		return
	}
	visible, _ := s.visibility(r)
	e, ok := s.deps.Directory.Get(pub, r.PathValue("id"))
	td, tdOK := s.deps.TDs.TDOf(pub, r.PathValue("id"))
	if !ok || !tdOK || e.Tombstone || !visible(e) || (!td.IsAgent() && !td.IsTool()) {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "no agent or tool %q of %s", r.PathValue("id"), pub))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, s.describe(s.baseURL(r), e, td))
}

// Collection is the discovery document (ANP-08 CollectionPage).
type Collection struct {
	Context map[string]string `json:"@context"`
	Type    string            `json:"@type"`
	URL     string            `json:"url"`
	Items   []CollectionItem  `json:"items"`
	Next    string            `json:"next,omitempty"`
}

// CollectionItem names one agent description.
type CollectionItem struct {
	Type string `json:"@type"`
	Name string `json:"name"`
	ID   string `json:"@id"`
}

// serveCollection serves a page of PathDescriptions: the agents, then the
// tools, the caller may see, by id.
func (s *Server) serveCollection(w http.ResponseWriter, r *http.Request) {
	offset, limit, p := httpapi.PageQuery(r.URL.Query(), DefaultPage, MaxPage)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	visible, _ := s.visibility(r)
	var entries []directory.Entry
	total := 0
	for _, typ := range []string{lmosproto.TypeAgent, lmosproto.TypeTool} {
		off := max(offset-total, 0)
		res, err := s.deps.Directory.Search(directory.Query{Type: typ, Visible: visible, ByID: true, Offset: off, Limit: max(limit-len(entries), 1)})
		if err != nil {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "listing %s: %v", typ, err))
			return
		}
		if len(entries) < limit {
			entries = append(entries, res.Entries[:min(len(res.Entries), limit-len(entries))]...)
		}
		total += res.Total
	}
	base := s.baseURL(r)
	c := Collection{Context: adContext, Type: "CollectionPage", URL: base + r.URL.RequestURI(), Items: []CollectionItem{}}
	consumed, size := len(entries), 0
	for i, e := range entries {
		it := CollectionItem{Type: "ad:AgentDescription", Name: e.Title, ID: base + DescriptionPath(e.Publisher, e.ThingID)}
		b, _ := json.Marshal(it) // strings only
		if len(c.Items) > 0 && size+len(b) > MaxPageBytes {
			consumed = i
			break
		}
		size += len(b) + 1
		c.Items = append(c.Items, it)
	}
	if end := offset + consumed; end < total {
		c.Next = base + PathDescriptions + "?" + url.Values{"offset": {strconv.Itoa(end)}, "limit": {strconv.Itoa(limit)}}.Encode()
	}
	w.Header().Set("Content-Type", "application/ld+json")
	httpapi.WriteJSON(w, http.StatusOK, c)
}

// baseURL is the URL of the API as the client of r reaches it: https
// when schemeOf says so or the Host is the node's did:wba domain (an
// operator fronts the API with HTTPS there).
func (s *Server) baseURL(r *http.Request) string {
	scheme := schemeOf(r)
	if id := s.deps.Identity; id != nil && (strings.EqualFold(r.Host, id.Host) || strings.EqualFold(r.Host, id.HostPort())) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
