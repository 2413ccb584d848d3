package tdd

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// searchJSONPath serves GET /search/jsonpath?query=Q (WoT Discovery
// §7.3.2.4.1): the RFC 9535 JSONPath query Q is evaluated against the JSON
// array of the TDs the caller may see, ordered by id as the listing is, and
// the answer is the JSON array of the nodes it selects (complete TDs, e.g.
// $[?@.title=='Lamp'], or fragments, e.g. $[*].id).
//
// Its cost is bounded: a query longer than Config.MaxQueryLength or nested
// deeper than Config.MaxQueryDepth is refused (400) before it runs, and a
// watchdog aborts an evaluation that runs longer than Config.SearchTimeout
// (503): the deadline is checked before each TD is decoded, before each TD
// is tested by a filter or descended into at the top level, and before
// each later segment is applied to each node. A query whose segments
// select more than Config.MaxSearchNodes nodes is refused (400) as it
// goes, which bounds its memory.
func (h *Handler) searchJSONPath(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if len(v["query"]) != 1 || v.Get("query") == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter query: want one JSONPath expression (RFC 9535), e.g. query=$[*].id"))
		return
	}
	q := v.Get("query")
	if len(q) > h.cfg.MaxQueryLength {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter query: %d bytes exceed the limit of %d", len(q), h.cfg.MaxQueryLength))
		return
	}
	if d := nesting(q); d > h.cfg.MaxQueryDepth {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter query: nested %d deep, deeper than the limit of %d", d, h.cfg.MaxQueryDepth))
		return
	}
	path, err := jsonpath.Parse(q)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter query: not a JSONPath expression (RFC 9535): %v", err))
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.SearchTimeout)
	defer cancel()
	res, err := h.deps.Directory.Search(directory.Query{Visible: h.visible(r), ByID: true})
	if err != nil {
		h.writeInternal(w, r, "search", "", err)
		return
	}
	root := make([]any, 0, len(res.Entries))
	for _, e := range res.Entries {
		if ctx.Err() != nil {
			break
		}
		raw, err := e.Raw()
		if err != nil {
			continue // removed since the search
		}
		doc, err := decodeJSON(raw)
		if err != nil {
			h.writeInternal(w, r, "decode", e.ThingID, err)
			return
		}
		root = append(root, doc)
	}
	nodes, err := evaluate(ctx, path.Query(), root, h.cfg.MaxSearchNodes)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		if errors.Is(err, errTooManyNodes) {
			httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter query: selects more than %d nodes on the way; narrow the query", h.cfg.MaxSearchNodes))
			return
		}
		if errors.Is(err, context.DeadlineExceeded) {
			httpapi.WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusServiceUnavailable,
				Detail: fmt.Sprintf("query parameter query: the evaluation was aborted after %s; narrow the query", h.cfg.SearchTimeout)})
		}
		return // the client left
	}
	if nodes == nil {
		nodes = []any{}
	}
	body, err := encodeJSON(nodes)
	if err != nil {
		h.writeInternal(w, r, "encode search result", "", err)
		return
	}
	writeBody(w, r, append(body, '\n'), ContentTypeJSON)
}

// errTooManyNodes: a segment selected more nodes than allowed.
var errTooManyNodes = errors.New("jsonpath: too many nodes selected")

// evaluate is q.Select(root, root) (q is absolute) with the watchdog ctx:
// it checks ctx between TDs at the top level and between the nodes each
// later segment is applied to, and returns ctx's error once it expired, or
// errTooManyNodes once a segment selected more than maxNodes nodes (each
// "..*" multiplies them).
func evaluate(ctx context.Context, q *spec.PathQuery, root []any, maxNodes int) ([]any, error) {
	res := []any{root}
	for i, seg := range q.Segments() {
		if i == 0 {
			var err error
			if res, err = selectTop(ctx, seg, root); err != nil {
				return nil, err
			}
			if len(res) > maxNodes {
				return nil, errTooManyNodes
			}
			continue
		}
		next := make([]any, 0, len(res))
		for _, v := range res {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if next = append(next, seg.Select(v, root)...); len(next) > maxNodes {
				return nil, errTooManyNodes
			}
		}
		res = next
	}
	return res, nil
}

// selectTop is seg.Select(root, root) for the first segment, applied to
// one TD at a time where the selector's work is per TD (filters, descent)
// so that the watchdog can stop it between TDs.
func selectTop(ctx context.Context, seg *spec.Segment, root []any) ([]any, error) {
	var out []any
	for _, sel := range seg.Selectors() {
		f, ok := sel.(*spec.FilterSelector)
		if !ok {
			out = append(out, sel.Select(root, root)...) // names, indexes, slices, wildcard: no evaluation
			continue
		}
		for _, td := range root {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if f.Eval(td, root) {
				out = append(out, td)
			}
		}
	}
	if seg.IsDescendant() {
		for _, td := range root {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out = append(out, seg.Select(td, root)...)
		}
	}
	return out, nil
}

// nesting is the deepest nesting of brackets and parentheses in a JSONPath
// expression, outside string literals.
func nesting(q string) int {
	depth, deepest := 0, 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0 && c == '\\':
			i++ // an escaped character
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == ')':
			depth--
		}
	}
	return deepest
}
