package agentsjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// plan is how an imported flow runs: its actions' operations in order,
// the links between them.
type plan struct {
	flow  Flow
	steps []step
}

// step is one action's operation: its method, URL template (server and
// path, {name} for path parameters) and where each parameter goes.
type step struct {
	actionID string
	method   string
	url      string
	in       map[string]string // parameter name → path, query, header, cookie
}

// readDoc fetches and decodes the agents.json at docURL.
func (c *Client) readDoc(ctx context.Context, docURL string) (*Doc, error) {
	body, err := c.fetch(ctx, docURL)
	if err != nil {
		return nil, fmt.Errorf("agentsjson: %w", err)
	}
	var doc Doc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("agentsjson: %s: %w", docURL, err)
	}
	if doc.AgentsJSON == "" || doc.Flows == nil {
		return nil, fmt.Errorf("agentsjson: %s is not an agents.json (agentsJson and flows are required)", docURL)
	}
	return &doc, nil
}

// resolve finds the operation of each of f's actions in the OpenAPI
// documents of doc's sources.
func (c *Client) resolve(ctx context.Context, docURL string, doc *Doc, f Flow) (*plan, error) {
	if len(f.Actions) == 0 {
		return nil, fmt.Errorf("agentsjson: flow %q has no action", f.ID)
	}
	apis := map[string]*openAPI{}
	p := &plan{flow: f}
	for _, a := range f.Actions {
		api, ok := apis[a.SourceID]
		if !ok {
			var err error
			if api, err = c.loadAPI(ctx, docURL, doc, a.SourceID); err != nil {
				return nil, fmt.Errorf("agentsjson: flow %q: %w", f.ID, err)
			}
			apis[a.SourceID] = api
		}
		s, err := api.operation(a.OperationID)
		if err != nil {
			return nil, fmt.Errorf("agentsjson: flow %q, action %q: source %q: operation %q: %w", f.ID, a.ID, a.SourceID, a.OperationID, err)
		}
		s.actionID = a.ID
		p.steps = append(p.steps, s)
	}
	return p, nil
}

// openAPI is a decoded OpenAPI 3 document and its URL (relative server
// URLs are resolved against it).
type openAPI struct {
	base *url.URL
	doc  map[string]any
}

// loadAPI reads the OpenAPI document of source id: embedded (member
// openapi) or at its path, relative to the agents.json's URL.
func (c *Client) loadAPI(ctx context.Context, docURL string, doc *Doc, id string) (*openAPI, error) {
	i := slices.IndexFunc(doc.Sources, func(s Source) bool { return s.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("no source %q", id)
	}
	src := doc.Sources[i]
	base, err := url.Parse(docURL)
	if err != nil {
		return nil, err
	}
	if src.Path != "" {
		if base, err = base.Parse(src.Path); err != nil {
			return nil, fmt.Errorf("source %q: path %q: %w", id, src.Path, err)
		}
	}
	body := []byte(src.OpenAPI)
	if len(body) == 0 {
		if !httpURL(base.String()) {
			return nil, fmt.Errorf("source %q: path %q is not an http(s) URL", id, src.Path)
		}
		if body, err = c.fetch(ctx, base.String()); err != nil {
			return nil, fmt.Errorf("source %q: %w", id, err)
		}
	}
	var v any
	if err := yaml.Unmarshal(body, &v); err != nil { // YAML 1.2 reads JSON too
		return nil, fmt.Errorf("source %q: %w", id, err)
	}
	m, ok := plainJSON(v).(map[string]any)
	if !ok || !strings.HasPrefix(fmt.Sprint(m["openapi"]), "3") {
		return nil, fmt.Errorf("source %q: not an OpenAPI 3 document", id)
	}
	return &openAPI{base: base, doc: m}, nil
}

// plainJSON turns what YAML decodes into JSON values: maps with
// non-string keys (status codes) get string keys.
func plainJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = plainJSON(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = plainJSON(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = plainJSON(e)
		}
	}
	return v
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operation finds the operation opID: its method, server URL and path,
// and the location of each parameter (the path item's and its own,
// local $refs followed).
func (a *openAPI) operation(opID string) (step, error) {
	paths, _ := a.doc["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item, _ := a.ref(paths[path]).(map[string]any)
		for _, m := range methods {
			op, _ := item[m].(map[string]any)
			if op == nil || op["operationId"] != opID {
				continue
			}
			server, err := a.server(op, item)
			if err != nil {
				return step{}, err
			}
			s := step{method: strings.ToUpper(m), url: strings.TrimSuffix(server, "/") + path, in: map[string]string{}}
			for _, list := range []any{item["parameters"], op["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					p, _ := a.ref(p).(map[string]any)
					name, _ := p["name"].(string)
					in, _ := p["in"].(string)
					if name != "" && in != "" {
						s.in[name] = in
					}
				}
			}
			return s, nil
		}
	}
	return step{}, errNoOperation
}

// server is the URL of the first server of op, its path item or the
// document (with its variables' defaults), resolved against the
// document's URL; "/" without servers, as OpenAPI says.
func (a *openAPI) server(op, item map[string]any) (string, error) {
	u := "/"
	for _, list := range []any{op["servers"], item["servers"], a.doc["servers"]} {
		ss, _ := list.([]any)
		if len(ss) == 0 {
			continue
		}
		s, _ := ss[0].(map[string]any)
		u, _ = s["url"].(string)
		vars, _ := s["variables"].(map[string]any)
		for name, v := range vars {
			v, _ := v.(map[string]any)
			u = strings.ReplaceAll(u, "{"+name+"}", fmt.Sprint(v["default"]))
		}
		break
	}
	ref, err := a.base.Parse(u)
	if err != nil || !httpURL(ref.String()) {
		return "", fmt.Errorf("server %q is not an http(s) URL", u)
	}
	return ref.String(), nil
}

// ref follows a local $ref ("#/components/parameters/limit").
func (a *openAPI) ref(v any) any {
	for range 8 {
		m, ok := v.(map[string]any)
		r, _ := m["$ref"].(string)
		if !ok || !strings.HasPrefix(r, "#/") {
			return v
		}
		var cur any = a.doc
		for _, tok := range strings.Split(r[2:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			o, _ := cur.(map[string]any)
			cur = o[tok]
		}
		v = cur
	}
	return v
}

// request is one operation's call under construction.
type request struct {
	path   map[string]string
	query  url.Values
	header http.Header
	body   any
	hasBdy bool
}

// run runs the plan with the Tool's input ({"parameters": {…},
// "requestBody": …}) and returns the last operation's answer.
func (c *Client) run(ctx context.Context, p *plan, input lmosproto.Value) (lmosproto.Value, error) {
	var in map[string]any
	if input.Present() && !input.IsNull() {
		if err := input.Decode(&in); err != nil {
			return lmosproto.Value{}, &lmosproto.Problem{Status: http.StatusBadRequest, Title: "Bad Request", Detail: "input: " + err.Error()}
		}
	}
	roots := map[string]any{p.flow.ID: obj{"parameters": in["parameters"], "requestBody": in["requestBody"]}}
	roots[""] = roots[p.flow.ID]
	var last any
	for i, s := range p.steps {
		r := request{path: map[string]string{}, query: url.Values{}, header: http.Header{}}
		links := 0
		for _, l := range p.flow.Links {
			if l.Target.ActionID != s.actionID {
				continue
			}
			links++
			if v, ok := lookup(roots[l.Origin.ActionID], l.Origin.FieldPath); ok {
				if err := r.set(s, l.Target.FieldPath, v); err != nil {
					return lmosproto.Value{}, err
				}
			}
		}
		if links == 0 && i == 0 {
			r.byName(s, in)
		}
		out, err := c.call(ctx, s, r)
		if err != nil {
			return lmosproto.Value{}, err
		}
		roots[s.actionID] = obj{"responses": obj{"success": out}, "response": out}
		last = out
	}
	b, err := json.Marshal(last)
	if err != nil {
		return lmosproto.Value{}, err
	}
	return lmosproto.ParseValue(b)
}

// byName fills r from the flow's input without links: each parameter
// to the operation's parameter of its name, else to the body's member;
// the request body as the body.
func (r *request) byName(s step, in map[string]any) {
	if rb, ok := in["requestBody"]; ok {
		r.body, r.hasBdy = rb, true
	}
	params, _ := in["parameters"].(map[string]any)
	for _, name := range sortedKeys(params) {
		target := "requestBody." + name
		if _, ok := s.in[name]; ok {
			target = "parameters." + name
		}
		_ = r.set(s, target, params[name])
	}
}

// set puts v at the target field path of operation s: parameters.NAME
// (the parameter's location, the query if the operation does not name
// it), requestBody or requestBody.a.b.
func (r *request) set(s step, path string, v any) error {
	if name, ok := strings.CutPrefix(path, "parameters."); ok {
		str := scalar(v)
		switch s.in[name] {
		case "path":
			r.path[name] = str
		case "header":
			r.header.Set(name, str)
		case "cookie":
			r.header.Add("Cookie", name+"="+url.QueryEscape(str))
		default:
			r.query.Set(name, str)
		}
		return nil
	}
	if path == "requestBody" {
		r.body, r.hasBdy = v, true
		return nil
	}
	if rest, ok := strings.CutPrefix(path, "requestBody."); ok {
		m, _ := r.body.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		cur := m
		keys := strings.Split(rest, ".")
		for _, k := range keys[:len(keys)-1] {
			next, _ := cur[k].(map[string]any)
			if next == nil {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
		r.body, r.hasBdy = m, true
		return nil
	}
	return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
		Detail: fmt.Sprintf("flow link target %q of action %q: want parameters.NAME or requestBody[.PATH]", path, s.actionID)}
}

// scalar is v as a parameter's text.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// lookup reads the dotted field path in root: parameters.NAME reads the
// parameter NAME whole (names may hold dots or brackets), other segments
// walk objects and (by index) arrays.
func lookup(root any, path string) (any, bool) {
	if name, ok := strings.CutPrefix(path, "parameters."); ok {
		m, _ := root.(obj)
		ps, _ := m["parameters"].(map[string]any)
		v, ok := ps[name]
		return v, ok
	}
	cur := root
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case obj:
			v, ok := c[k]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, cur != nil
}

// call makes the request r of operation s and decodes its answer: JSON
// as JSON, anything else as a string. An answer other than 2xx is a
// problem naming the operation and its status.
func (c *Client) call(ctx context.Context, s step, r request) (any, error) {
	u := s.url
	for name, v := range r.path {
		u = strings.ReplaceAll(u, "{"+name+"}", url.PathEscape(v))
	}
	if len(r.query) > 0 {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + r.query.Encode()
	}
	var body io.Reader
	if r.hasBdy {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, s.method, u, body)
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: fmt.Sprintf("action %q: %v", s.actionID, err)}
	}
	req.Header = r.header
	req.Header.Set("Accept", "application/json")
	if r.hasBdy {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: fmt.Sprintf("action %q: %v", s.actionID, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponse+1))
	if err == nil && int64(len(b)) > c.cfg.MaxResponse {
		err = fmt.Errorf("the answer is longer than %d bytes", c.cfg.MaxResponse)
	}
	if err != nil {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: fmt.Sprintf("action %q: %s %s: %v", s.actionID, s.method, req.URL.Redacted(), err)}
	}
	if resp.StatusCode/100 != 2 {
		return nil, &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("action %q: %s %s: HTTP %d: %s", s.actionID, s.method, req.URL.Redacted(), resp.StatusCode, clip(string(b), 512))}
	}
	if len(b) == 0 {
		return nil, nil
	}
	if jsonType(resp.Header.Get("Content-Type")) {
		var v any
		if err := json.Unmarshal(b, &v); err == nil {
			return v, nil
		}
	}
	return string(b), nil
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
