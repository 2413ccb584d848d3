package aicatalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ARD search (ard.openapi.yaml, POST /search) over the node's directory.
const (
	// DefaultPageSize and MaxPageSize are ARD's.
	DefaultPageSize = 10
	MaxPageSize     = 100
	// maxFinds bounds the capabilities one search asks the network for.
	maxFinds = 4
	// maxSearchBody bounds a search request.
	maxSearchBody = 64 << 10
)

// SearchRequest is the body of POST /ard/search.
type SearchRequest struct {
	Query      Query  `json:"query"`
	Federation string `json:"federation,omitempty"`
	PageSize   int    `json:"pageSize,omitempty"`
	PageToken  string `json:"pageToken,omitempty"`
}

// Query is ARD's query model: text and filter. The filter keys the node
// supports are type, tags, capabilities, publisher (the Thing's
// publisher: peer ID or did:key, or the identifier's host segment) and
// metadata.lmos:thingId; values are a string or an array of them.
type Query struct {
	Text   string                     `json:"text"`
	Filter map[string]json.RawMessage `json:"filter,omitempty"`
}

// SearchResult is an entry of a search's results.
type SearchResult struct {
	Entry
	Score  int    `json:"score"`
	Source string `json:"source"`
}

// SearchResponse is the answer of a search.
type SearchResponse struct {
	Results   []SearchResult `json:"results"`
	PageToken string         `json:"pageToken,omitempty"`
}

// ardError is ARD's Error.
type ardError struct {
	ErrorCode string `json:"errorCode"`
	Message   string `json:"message"`
}

func writeARDError(w http.ResponseWriter, status int, code, format string, args ...any) {
	writeJSON(w, status, ardError{ErrorCode: code, Message: fmt.Sprintf(format, args...)})
}

// serveSearch answers an ARD search: the directory's agents and tools
// this node may see that match the text (its free-text ranking) and the
// filter, agents as their A2A card entries and tools as the MCP
// endpoint's entry naming their tools. Federation auto (the default) and
// referrals ask the network first for each capability of the filter, and,
// when the directory has no match, for the text taken as a capability id
// — what `find` and the listing's capability filter do (Finder); none
// stays in the directory. The node refers to no other registry.
func (h *Handler) serveSearch(w http.ResponseWriter, r *http.Request) {
	req, err := readSearch(w, r)
	if err != nil {
		writeARDError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "%v", err)
		return
	}
	f, err := parseFilter(req.Query.Filter)
	if err != nil {
		writeARDError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "%v", err)
		return
	}
	offset := 0
	if req.PageToken != "" {
		b, berr := base64.RawURLEncoding.DecodeString(req.PageToken)
		if offset, err = strconv.Atoi(string(b)); berr != nil || err != nil || offset < 0 {
			writeARDError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "pageToken %q is not one this registry gave", req.PageToken)
			return
		}
	}
	network := req.Federation != "none" && h.deps.Finder != nil
	if network {
		for _, c := range f["capabilities"][:min(len(f["capabilities"]), maxFinds)] {
			h.lookup(r.Context(), c)
		}
	}
	// One more than the page: whether a next page follows.
	want := offset + req.PageSize + 1
	matches := h.match(directory.Query{Text: req.Query.Text}, f, want)
	if len(matches) == 0 && network && len(f["capabilities"]) == 0 && !strings.ContainsAny(strings.TrimSpace(req.Query.Text), " \t\n") {
		id := strings.TrimSpace(req.Query.Text)
		h.lookup(r.Context(), id)
		// A trailing "@": an "@" inside the id is not a version range.
		matches = h.match(directory.Query{Capability: id + "@"}, f, want)
	}
	resp := SearchResponse{Results: []SearchResult{}}
	// Scores are relative to the best match (the first, unless an online
	// Thing ranks before a better offline one: the best of those up to
	// this page).
	top := 0.0
	for _, m := range matches {
		top = max(top, m.Score)
	}
	for i, m := range matches[min(offset, len(matches)):] {
		if i == req.PageSize {
			resp.PageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset + i)))
			break
		}
		e, ok := h.thingEntry(r, m)
		if !ok {
			continue
		}
		resp.Results = append(resp.Results, SearchResult{Entry: e, Score: score(m.Score, top), Source: httpapi.BaseURL(r) + PathRegistry})
	}
	writeJSON(w, http.StatusOK, resp)
}

// readSearch reads and checks a search request (ARD's SearchRequest:
// no other members, text required, pageSize 1 to MaxPageSize).
func readSearch(w http.ResponseWriter, r *http.Request) (SearchRequest, error) {
	var req SearchRequest
	body, p := httpapi.ReadBody(w, r, maxSearchBody)
	if p != nil {
		return req, errors.New(p.Detail)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("the request is not an ARD SearchRequest: %v", err)
	}
	switch {
	case strings.TrimSpace(req.Query.Text) == "":
		return req, errors.New("query.text is required")
	case !slices.Contains([]string{"", "auto", "referrals", "none"}, req.Federation):
		return req, fmt.Errorf("federation %q: want auto, referrals or none", req.Federation)
	case req.PageSize < 0 || req.PageSize > MaxPageSize:
		return req, fmt.Errorf("pageSize %d: want 1 to %d", req.PageSize, MaxPageSize)
	case req.PageSize == 0:
		req.PageSize = DefaultPageSize
	}
	return req, nil
}

// filter is a parsed ARD filter: field path to the values, one of which
// must match.
type filter map[string][]string

// filterKeys are the filter keys the node supports.
var filterKeys = []string{"type", "tags", "capabilities", "publisher", "metadata." + MetaThingID}

func parseFilter(raw map[string]json.RawMessage) (filter, error) {
	f := filter{}
	for k, v := range raw {
		if !slices.Contains(filterKeys, k) {
			return nil, fmt.Errorf("filter key %q is not supported (supported: %s)", k, strings.Join(filterKeys, ", "))
		}
		var one string
		if json.Unmarshal(v, &one) == nil {
			f[k] = []string{one}
			continue
		}
		var many []string
		if err := json.Unmarshal(v, &many); err != nil {
			return nil, fmt.Errorf("filter %q: want a string or an array of strings", k)
		}
		f[k] = many
	}
	return f, nil
}

// lookup asks the network for the Things of capability id: what it
// finds lands in the directory.
func (h *Handler) lookup(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.FindTimeout)
	defer cancel()
	if err := h.deps.Finder.LookupCapability(ctx, id); err != nil {
		h.cfg.Log.Debug("capability lookup failed", "capability", id, "err", err)
	}
}

// match searches the directory: the first n (at least; all, if fewer) of
// the agents and tools this node may see that q selects (ranked by its
// text, if any) and that pass f. It asks the directory for pages of
// growing size, each after the last, until n passed or the matches ran
// out: the directory builds the entries of its pages, not of every match.
func (h *Handler) match(q directory.Query, f filter, n int) []directory.Entry {
	var out []directory.Entry
	seen := map[[2]string]bool{}
	q.Visible = h.deps.Visible
	for q.Offset, q.Limit = 0, max(2*n, 64); ; q.Offset, q.Limit = q.Offset+q.Limit, 4*q.Limit {
		res, err := h.deps.Directory.Search(q)
		if err != nil {
			return out
		}
		out = append(out, filterEntries(res.Entries, f, h, seen)...)
		if len(out) >= n || q.Offset+len(res.Entries) >= res.Total {
			return out
		}
	}
}

// filterEntries keeps the agents and tools of es that pass f, once each:
// those not in seen, which it adds them to.
func filterEntries(es []directory.Entry, f filter, h *Handler, seen map[[2]string]bool) []directory.Entry {
	var out []directory.Entry
	for _, e := range es {
		key := [2]string{string(e.Publisher), e.ThingID}
		if seen[key] || !h.visibleAgentOrTool(e) || !f.match(e) {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

// match reports whether the Thing e passes every key of f.
func (f filter) match(e directory.Entry) bool {
	agent := slices.Contains(e.Types, lmosproto.TypeAgent)
	for k, vals := range f {
		var have []string
		switch k {
		case "type":
			have = []string{TypeServerCard}
			if agent {
				have = []string{TypeA2ACard}
			}
		case "tags":
			have = []string{"mcp"}
			if agent {
				have = []string{"agent"}
			}
		case "capabilities":
			for _, c := range e.Capabilities {
				have = append(have, c.ID)
			}
		case "publisher":
			have = []string{e.Publisher.String()}
			if pub, err := lmosproto.Ed25519FromPeerID(e.Publisher); err == nil {
				have = append(have, lmosproto.DIDKey(pub))
			}
		case "metadata." + MetaThingID:
			have = []string{e.ThingID}
		}
		if !slices.ContainsFunc(vals, func(v string) bool { return slices.Contains(have, v) }) {
			return false
		}
	}
	return true
}

// thingEntry is the catalog entry of the Thing de: its A2A card's for an
// agent, else the MCP endpoint's naming its tools.
func (h *Handler) thingEntry(r *http.Request, de directory.Entry) (Entry, bool) {
	if slices.Contains(de.Types, lmosproto.TypeAgent) {
		return h.agentEntry(r, de)
	}
	return h.mcpEntry(r, &de), true
}

// score maps a free-text score to ARD's 0-100, relative to the best.
func score(s, top float64) int {
	if top <= 0 {
		return 100
	}
	return int(max(1, min(100, 100*s/top)))
}
