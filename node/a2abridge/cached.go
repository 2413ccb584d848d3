package a2abridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// The cards and the index are rendered from the directory, most of it
// other publishers' agents: each is rendered once per revision of the
// directory and of what this node may see (Refresh), kept in an
// httpapi.DocCache and served with an ETag, Cache-Control: no-cache and
// 304 Not Modified (docs/api.md#caching); each has a byte budget.
const (
	// MaxNodeCardBytes bounds the node's card. A card is read whole by
	// every client: past the budget (or maxCardSkills) the card lists
	// the node's own agents first and as many others as fit, and says so
	// in its description; GET /a2a/agents pages through all of them.
	MaxNodeCardBytes = 256 << 10
	// DefaultIndexLimit and MaxIndexLimit are the default and largest
	// page of GET /a2a/agents (query parameters offset and limit).
	DefaultIndexLimit = 100
	MaxIndexLimit     = 1000
	// MaxIndexPageBytes bounds a page of the index: a page that would
	// be longer ends early (its next link continues after it).
	MaxIndexPageBytes = 256 << 10

	// In the node's card a skill is a summary: its name, description and
	// examples are clipped (the agent's own card has them whole).
	maxSkillName        = 128
	maxSkillDescription = 512
	maxSkillTags        = 8
	maxSkillExamples    = 3
	maxSkillExample     = 200
	// cardReserve is what the node's card holds besides its skills and
	// agent references (name, description, interface, signature).
	cardReserve = 8 << 10
)

// cardDocs are the documents the bridge renders from the directory.
type cardDocs struct {
	// view counts Refresh calls: what this node may see changed.
	view  atomic.Uint64
	node  *httpapi.DocCache // the node's card, per base URL
	cards *httpapi.DocCache // the per-agent cards
	index *httpapi.DocCache // the pages of the index
}

func newCardDocs() *cardDocs {
	return &cardDocs{
		node:  httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 8, MaxBytes: 8 * MaxNodeCardBytes}),
		cards: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 1024, MaxBytes: 16 << 20}),
		index: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 64, MaxBytes: 16 * MaxIndexPageBytes}),
	}
}

// Refresh tells the bridge that what this node may see changed (its group
// memberships): the cards and the index are rendered again. The
// composition root calls it, as it calls the MCP server's.
func (b *Bridge) Refresh() { b.docs.view.Add(1) }

// cached serves render's answers from docs, keyed by the base URL (the
// documents name this node's URLs) and the request's path, and with query
// for the index's pages.
func (b *Bridge) cached(docs *httpapi.DocCache, query bool, render http.HandlerFunc) http.Handler {
	return docs.Handler(func(r *http.Request) (string, string, bool) {
		key := baseURL(r) + r.URL.Path
		if query {
			key += "?" + r.URL.RawQuery
		}
		tag := b.deps.Directory.Revision() + "/" + strconv.FormatUint(b.docs.view.Load(), 10)
		if b.deps.Orgs != nil {
			// A claim verified (or failed) since: render again.
			tag += "/" + strconv.FormatUint(b.deps.Orgs.Generation(), 10)
		}
		return key, tag, true
	}, render)
}

// fitNodeCard chooses the agents the node's card lists: the node's own
// first, then the others in the index's order, as summaries, as many as
// fit MaxNodeCardBytes and maxCardSkills. note says what was left out,
// for the card's description ("" if nothing).
func (b *Bridge) fitNodeCard(refs []AgentRef, skills []AgentSkill) ([]AgentRef, []AgentSkill, string) {
	self := b.deps.Self.String()
	order := make([]int, 0, len(refs))
	for pass := range 2 {
		for i, r := range refs {
			if (r.Publisher == self) == (pass == 0) {
				order = append(order, i)
			}
		}
	}
	var outRefs []AgentRef
	var outSkills []AgentSkill
	used, clipped := cardReserve, false
	for _, i := range order {
		s, ref := summary(skills[i]), refs[i]
		ref.Name = clip(ref.Name, maxSkillName)
		clipped = clipped || !skillEqual(s, skills[i])
		sb, _ := json.Marshal(s)   // strings only
		rb, _ := json.Marshal(ref) // strings only
		if len(outSkills) == maxCardSkills || used+len(sb)+len(rb)+2 > MaxNodeCardBytes {
			break
		}
		used += len(sb) + len(rb) + 2
		outRefs, outSkills = append(outRefs, ref), append(outSkills, s)
	}
	note := ""
	if len(outSkills) < len(skills) {
		note = fmt.Sprintf(" This card lists %d of the %d agents this node reaches, its own first (a card stays under %d KiB and %d skills); GET %s lists them all, page by page.",
			len(outSkills), len(skills), MaxNodeCardBytes>>10, maxCardSkills, PathAgents)
	}
	if clipped {
		note += fmt.Sprintf(" Skills here are summaries (descriptions clipped at %d bytes); each agent's own card has them whole.", maxSkillDescription)
	}
	return outRefs, outSkills, note
}

// summary is skill s as the node's card lists it.
func summary(s AgentSkill) AgentSkill {
	s.Name = clip(s.Name, maxSkillName)
	s.Description = clip(s.Description, maxSkillDescription)
	s.Tags = slices.Clone(s.Tags[:min(len(s.Tags), maxSkillTags)])
	for i := range s.Tags {
		s.Tags[i] = clip(s.Tags[i], maxSkillName)
	}
	s.Examples = slices.Clone(s.Examples[:min(len(s.Examples), maxSkillExamples)])
	for i := range s.Examples {
		s.Examples[i] = clip(s.Examples[i], maxSkillExample)
	}
	return s
}

func skillEqual(a, b AgentSkill) bool {
	return a.Name == b.Name && a.Description == b.Description && slices.Equal(a.Tags, b.Tags) && slices.Equal(a.Examples, b.Examples)
}

// clip shortens s to at most n bytes, at a character boundary, marked
// with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "…"
	i := n - len(more)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + more
}

// serveAgents serves a page of the agent index: GET /a2a/agents?offset=&limit=
// (default DefaultIndexLimit, at most MaxIndexLimit agents, at most
// MaxIndexPageBytes), in the directory's order (online first, then by
// thing id), with the total and the URL of the next page (also as a Link
// header).
func (b *Bridge) serveAgents(w http.ResponseWriter, r *http.Request) {
	offset, limit, p := httpapi.PageQuery(r.URL.Query(), DefaultIndexLimit, MaxIndexLimit)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	res, err := b.deps.Directory.Search(directory.Query{Type: lmosproto.TypeAgent, Visible: b.deps.Visible, ByID: true, Offset: offset, Limit: limit})
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "listing agents: %v", err))
		return
	}
	base := baseURL(r)
	idx := AgentIndex{Agents: []AgentRef{}, Total: res.Total}
	consumed, size := len(res.Entries), 0
	for i, e := range res.Entries {
		td, ok := b.deps.TDs.TDOf(e.Publisher, e.ThingID)
		if !ok {
			continue // removed since the search
		}
		u := base + AgentPath(e.Publisher, e.ThingID)
		ref := AgentRef{ThingID: e.ThingID, Publisher: e.Publisher.String(), Organization: b.organization(e.Publisher, td), Name: td.Title, URL: u, Card: u + agentCardFile}
		rb, _ := json.Marshal(ref) // strings only
		if len(idx.Agents) > 0 && size+len(rb) > MaxIndexPageBytes {
			consumed = i
			break
		}
		size += len(rb) + 1
		idx.Agents = append(idx.Agents, ref)
	}
	if end := offset + consumed; end < res.Total {
		idx.Next = base + PathAgents + "?" + url.Values{"offset": {strconv.Itoa(end)}, "limit": {strconv.Itoa(limit)}}.Encode()
		w.Header().Add("Link", "<"+idx.Next+`>; rel="next"`)
	}
	httpapi.WriteJSON(w, http.StatusOK, idx)
}
