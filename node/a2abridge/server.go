package a2abridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes of the bridge on the node's API (docs/api.md, docs/bridges.md).
const (
	// WellKnownCard is the node's card: an index of its agents.
	WellKnownCard = "/.well-known/agent-card.json"
	// PathPrefix is the root of the A2A routes; POST on it is the
	// node-wide JSON-RPC endpoint.
	PathPrefix = "/a2a"
	// PathAgents lists the agents with their card URLs.
	PathAgents = PathPrefix + "/agents"
	// pathJWKS is the node's JSON Web Key Set.
	pathJWKS = PathPrefix + "/jwks.json"
	// PathImports is where `lmosnode a2a import` posts a card URL.
	PathImports = "/api/v1/a2a/imports"
)

// Patterns returns the ServeMux patterns the bridge serves.
func Patterns() []string {
	return slices.Concat([]string{WellKnownCard, PathPrefix, PathPrefix + "/{publisher}/{id}", PathPrefix + "/{publisher}/{id}/{$}",
		PathPrefix + "/{publisher}/{id}/.well-known/agent-card.json", PathAgents, pathJWKS, PathImports},
		restPaths(PathPrefix), restPaths(pathAgentBase), rest03Paths(PathPrefix), rest03Paths(pathAgentBase))
}

func (b *Bridge) routes() {
	b.mux = http.NewServeMux()
	b.docs = newCardDocs()
	b.mux.Handle("GET "+WellKnownCard, b.cached(b.docs.node, false, b.serveNodeCard))
	b.mux.HandleFunc("POST "+PathPrefix, b.serveNodeRPC)
	// An agent's base URL ends with a slash, so that clients find its card
	// relative to it (new URL(".well-known/agent-card.json", base)); the
	// form without the slash is served too.
	for _, p := range []string{PathPrefix + "/{publisher}/{id}", PathPrefix + "/{publisher}/{id}/{$}"} {
		b.mux.Handle("GET "+p, b.cached(b.docs.cards, false, b.serveAgentCard))
		b.mux.HandleFunc("POST "+p, b.serveAgentRPC)
	}
	b.mux.Handle("GET "+PathPrefix+"/{publisher}/{id}/.well-known/agent-card.json", b.cached(b.docs.cards, false, b.serveAgentCard))
	b.mux.Handle("GET "+PathAgents, b.cached(b.docs.index, true, b.serveAgents))
	b.mux.HandleFunc("GET "+pathJWKS, func(w http.ResponseWriter, _ *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, b.signer.jwks())
	})
	b.mux.HandleFunc("POST "+PathImports, b.serveImport)
	b.restRoutes()
	b.rest03Routes()
}

// ServeHTTP implements http.Handler.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := b.mux.Handler(r); pattern == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	b.mux.ServeHTTP(w, r)
}

// baseURL is the URL of the API as the client of r reaches it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// AgentPath is the path of the A2A endpoint of the agent id of publisher,
// ending with a slash; its card is at AgentPath + ".well-known/agent-card.json".
func AgentPath(publisher peer.ID, id string) string {
	return PathPrefix + "/" + url.PathEscape(publisher.String()) + "/" + url.PathEscape(id) + "/"
}

// agentCardFile is the card's path relative to an agent's base URL.
const agentCardFile = ".well-known/agent-card.json"

// agents returns the lmos:Agent Things this node may see, by id.
func (b *Bridge) agents() []directory.Entry {
	res, err := b.deps.Directory.Search(directory.Query{Type: lmosproto.TypeAgent, Visible: b.deps.Visible, ByID: true})
	if err != nil {
		b.log.Warn("listing agents", "err", err)
		return nil
	}
	return res.Entries
}

// AgentRef is an entry of the agent index (GET /a2a/agents).
type AgentRef struct {
	// ThingID and Publisher name the lmos:Agent.
	ThingID   string `json:"thingId"`
	Publisher string `json:"publisher"`
	// Organization is the organisation the agent's TD claims, checked
	// (docs/identity.md): its domain is the publisher's only when
	// verified. Absent without a claim.
	Organization *did.Organization `json:"organization,omitempty"`
	// Name is the agent's title.
	Name string `json:"name"`
	// URL is the agent's A2A base URL: its JSON-RPC endpoint.
	URL string `json:"url"`
	// Card is the URL of its agent card.
	Card string `json:"card"`
}

// AgentIndex is the body of GET /a2a/agents: a page of the index.
type AgentIndex struct {
	Agents []AgentRef `json:"agents"`
	// Total counts the agents of all pages.
	Total int `json:"total"`
	// Next is the URL of the next page; empty on the last.
	Next string `json:"next,omitempty"`
}

func (b *Bridge) index(r *http.Request) ([]AgentRef, []AgentSkill) {
	base := baseURL(r)
	refs := []AgentRef{}
	skills := []AgentSkill{}
	for _, e := range b.agents() {
		td, ok := b.deps.TDs.TDOf(e.Publisher, e.ThingID)
		if !ok {
			continue
		}
		u := base + AgentPath(e.Publisher, e.ThingID)
		refs = append(refs, AgentRef{ThingID: e.ThingID, Publisher: e.Publisher.String(), Organization: b.organization(e.Publisher, td), Name: td.Title, URL: u, Card: u + agentCardFile})
		s := AgentSkill{ID: e.Publisher.String() + "/" + e.ThingID, Name: td.Title, Description: td.Description, Tags: []string{lmosproto.TypeAgent}}
		for _, c := range td.Capabilities {
			s.Tags = append(s.Tags, c.ID)
			s.Examples = append(s.Examples, c.Examples...)
		}
		if s.Description == "" {
			s.Description = td.Title
		}
		skills = append(skills, s)
	}
	return refs, skills
}

// maxCardSkills bounds the agents the node's card lists (fitNodeCard);
// GET /a2a/agents lists them all.
const maxCardSkills = 256

// serveNodeCard serves the node's own card: one skill per agent the node
// may see, the node-wide endpoint as its interface, and the per-agent card
// URLs in the params of the LMOS extension.
func (b *Bridge) serveNodeCard(w http.ResponseWriter, r *http.Request) {
	refs, skills := b.index(r)
	// A card is read whole by every client: the rest are in the index.
	refs, skills, note := b.fitNodeCard(refs, skills)
	base := baseURL(r)
	yes, no := true, false
	c := AgentCard{
		Name: "lmosnode " + b.deps.Self.String(),
		Description: "An LMOS node. Each skill is an agent of the federation this node can reach; address one with message metadata " +
			`"lmos:agent" (its thing id) or use its own card (LMOS extension params.agents[].card, or GET ` + PathAgents + ")." + note,
		SupportedInterfaces: []AgentInterface{{URL: base + PathPrefix, ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion}, restInterface(base + PathPrefix)},
		Version:             b.deps.Directory.Revision(),
		Capabilities:        AgentCapabilities{Streaming: &yes, PushNotifications: &no},
		DefaultInputModes:   bridgeModes,
		DefaultOutputModes:  bridgeModes,
		Skills:              skills,
	}
	if c.Version == "" {
		c.Version = "0"
	}
	params, _ := json.Marshal(map[string]any{"publisher": b.deps.Self.String(), "agents": refs}) // strings only
	c.Capabilities.Extensions = []AgentExtension{{URI: ExtensionLMOS, Description: "The agents behind this node's skills and their cards.", Params: params}}
	b.secure(&c)
	b.writeCard(w, r, c)
}

// secure declares the API's bearer token on c when one is required.
func (b *Bridge) secure(c *AgentCard) {
	if !b.cfg.BearerAuth {
		return
	}
	c.SecuritySchemes = map[string]SecurityScheme{"bearer": {HTTPAuth: &HTTPAuthSecurityScheme{Scheme: "Bearer",
		Description: "The node's API token (lmosnode config apiToken)"}}}
	c.SecurityRequirements = []SecurityRequirement{{Schemes: map[string]StringList{"bearer": {}}}}
}

func (b *Bridge) writeCard(w http.ResponseWriter, r *http.Request, c AgentCard) {
	dualCard(&c) // a card for A2A 0.3 clients as well
	if err := b.signer.signDual(&c, baseURL(r)+pathJWKS); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "signing the card: %v", err))
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, c)
}

// agentOf resolves the agent of a per-agent route.
func (b *Bridge) agentOf(r *http.Request, call bool) (directory.Entry, *lmosproto.TD, *lmosproto.Problem) {
	pub, err := lmosproto.ParsePublisher(r.PathValue("publisher"))
	if err != nil {
		return directory.Entry{}, nil, httpapi.Problemf(http.StatusNotFound, "no agent at %s: %v", r.URL.Path, err)
	}
	return b.resolve(r.Context(), r.PathValue("id"), pub, call)
}

// resolve finds the agent id (of publisher, if set) by the node's rule.
func (b *Bridge) resolve(ctx context.Context, id string, pub peer.ID, call bool) (directory.Entry, *lmosproto.TD, *lmosproto.Problem) {
	e, err := b.deps.Resolver.Resolve(ctx, id, pub, call)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusInternalServerError, "resolving agent %q: %v", id, err)
		}
		return e, nil, p
	}
	td, ok := b.deps.TDs.TDOf(e.Publisher, e.ThingID)
	if !ok || !td.IsAgent() {
		return e, nil, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s is not an lmos:Agent", id, e.Publisher)
	}
	return e, td, nil
}

func (b *Bridge) serveAgentCard(w http.ResponseWriter, r *http.Request) {
	e, td, p := b.agentOf(r, false)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	c := cardOf(td, e.Publisher, b.organization(e.Publisher, td), baseURL(r)+AgentPath(e.Publisher, e.ThingID), false)
	b.secure(&c)
	b.writeCard(w, r, c)
}

// call is one JSON-RPC request with the agent it addresses (none yet at
// the node-wide endpoint).
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	req   rpcRequest
	agent func(metadata ...json.RawMessage) (directory.Entry, *lmosproto.TD, *RPCError)
	// thingID restricts task methods to the tasks of one agent; empty at
	// the node-wide endpoint.
	thingID string
	// rest is set for a call of the HTTP+JSON binding (rest.go).
	rest bool
	// v03 is set for a request of A2A 0.3, answered in 0.3 form (jsonrpc03.go).
	v03 bool
}

func (b *Bridge) serveAgentRPC(w http.ResponseWriter, r *http.Request) {
	b.serveRPC(w, r, b.agentSetup(r))
}

// agentSetup resolves the agent of a per-agent route for a call.
func (b *Bridge) agentSetup(r *http.Request) func(*call) {
	e, td, p := b.agentOf(r, true)
	return func(c *call) {
		if p != nil {
			c.agent = func(...json.RawMessage) (directory.Entry, *lmosproto.TD, *RPCError) { return e, nil, problemErr(p) }
			c.thingID = r.PathValue("id")
			return
		}
		c.agent = func(...json.RawMessage) (directory.Entry, *lmosproto.TD, *RPCError) { return e, td, nil }
		c.thingID = e.ThingID
	}
}

// Metadata keys with which a message names the agent and action it is for.
const (
	metaAgent     = "lmos:agent"
	metaPublisher = "lmos:publisher"
	metaAction    = "lmos:action"
	// metaStream opens a streaming session (LMOS invokeAction "stream":
	// true); metaStreamEnd ends its input (streamEnd).
	metaStream    = "lmos:stream"
	metaStreamEnd = "lmos:streamEnd"
)

func (b *Bridge) serveNodeRPC(w http.ResponseWriter, r *http.Request) {
	b.serveRPC(w, r, b.nodeSetup(r))
}

// nodeSetup makes a call at the node-wide endpoint find its agent by the
// metadata of its message.
func (b *Bridge) nodeSetup(r *http.Request) func(*call) {
	return func(c *call) {
		c.agent = func(metadata ...json.RawMessage) (directory.Entry, *lmosproto.TD, *RPCError) {
			id, pubStr := metaString(metaAgent, metadata...), metaString(metaPublisher, metadata...)
			if id == "" {
				all := b.agents()
				if len(all) != 1 {
					return directory.Entry{}, nil, rpcErr(CodeInvalidParams,
						"this node reaches %d agents: name one with message metadata %q (its thing id; see the skills of %s)", len(all), metaAgent, WellKnownCard)
				}
				id, pubStr = all[0].ThingID, all[0].Publisher.String()
			}
			var pub peer.ID
			if pubStr != "" {
				var err error
				if pub, err = lmosproto.ParsePublisher(pubStr); err != nil {
					return directory.Entry{}, nil, rpcErr(CodeInvalidParams, "metadata %s: %v", metaPublisher, err)
				}
			}
			e, td, p := b.resolve(r.Context(), id, pub, true)
			if p != nil {
				return e, nil, problemErr(p)
			}
			return e, td, nil
		}
	}
}

// metaString is the string member key of the first metadata object that
// has it.
func metaString(key string, metadata ...json.RawMessage) string {
	for _, md := range metadata {
		var m map[string]any
		if json.Unmarshal(md, &m) != nil {
			continue
		}
		if s, ok := m[key].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// metaBool is the boolean member key of the first metadata object that
// has it.
func metaBool(key string, metadata ...json.RawMessage) bool {
	for _, md := range metadata {
		var m map[string]any
		if json.Unmarshal(md, &m) != nil {
			continue
		}
		if v, ok := m[key].(bool); ok {
			return v
		}
	}
	return false
}

// serveRPC reads a JSON-RPC request and dispatches it.
func (b *Bridge) serveRPC(w http.ResponseWriter, r *http.Request, setup func(*call)) {
	c := &call{w: w, r: r}
	body, rerr := readBody(w, r)
	if rerr != nil {
		writeRPC(w, nil, nil, rerr)
		return
	}
	if err := json.Unmarshal(body, &c.req); err != nil {
		writeRPC(w, nil, nil, rpcErr(CodeParseError, "Invalid JSON payload: %v", err))
		return
	}
	if c.req.JSONRPC != "2.0" || c.req.Method == "" {
		writeRPC(w, c.req.ID, nil, rpcErr(CodeInvalidRequest, `Request payload validation error: "jsonrpc" must be "2.0" and "method" set`))
		return
	}
	if err := route03(c); err != nil {
		c.reply(nil, err)
		return
	}
	setup(c)
	b.dispatch(c)
}

// readBody reads the body of a request of either binding, at most
// maxBody bytes, and refuses one that is not UTF-8 (a charset parameter
// other than utf-8, invalid UTF-8, an escaped lone surrogate), which
// decoding would rewrite to U+FFFD: the bridge forwards text as sent or
// not at all.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *RPCError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, rpcErr(CodeParseError, "reading the request: %v", err)
	}
	if rerr := checkText(r, body); rerr != nil {
		return nil, rerr
	}
	return body, nil
}

// checkText is readBody's check of the text.
func checkText(r *http.Request, body []byte) *RPCError {
	p := httpapi.CheckJSONCharset(r)
	if p == nil {
		p = httpapi.CheckJSONText(body)
	}
	if p == nil {
		return nil
	}
	return rpcErr(CodeParseError, "Invalid JSON payload: %s", p.Detail)
}

// versionErr refuses the A2A version v.
func versionErr(v string) *RPCError {
	return rpcErr(CodeVersionNotSupported, "A2A version %q is not supported; this agent speaks %s (send header A2A-Version: %s)", v, ProtocolVersion, ProtocolVersion)
}

// dispatch runs the method of c: both bindings end here.
func (b *Bridge) dispatch(c *call) {
	switch c.req.Method {
	case MethodSendMessage:
		b.sendMessage(c)
	case MethodSendStreamingMessage:
		b.sendStreamingMessage(c)
	case MethodGetTask:
		b.getTask(c)
	case MethodCancelTask:
		b.cancelTask(c)
	case MethodSubscribeToTask:
		b.subscribeToTask(c)
	case MethodListTasks:
		b.listTasks(c)
	case MethodGetExtendedAgentCard:
		// §3.3.4: the cards do not declare capabilities.extendedAgentCard.
		c.reply(nil, rpcErr(CodeUnsupportedOperation, "this agent offers no extended card (capabilities.extendedAgentCard is not set)"))
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		c.reply(nil, rpcErr(CodePushNotSupported, "push notifications are not supported"))
	default:
		c.reply(nil, rpcErr(CodeMethodNotFound, "Method not found: %q", c.req.Method))
	}
}

// reply answers c: with result, or err. The JSON-RPC binding answers with
// a JSON-RPC response, the HTTP+JSON binding with the result as the body
// or the error with its HTTP status (writeREST).
func (c *call) reply(result any, err *RPCError) {
	switch {
	case c.rest && c.v03:
		writeREST03(c.w, result, err)
	case c.rest:
		writeREST(c.w, result, err)
	case c.v03:
		c.reply03(result, err)
	default:
		writeRPC(c.w, c.req.ID, result, err)
	}
}

// eventData is the data of a stream's event ev: a JSON-RPC response in
// the generation of the request (JSON-RPC binding) or ev itself
// (HTTP+JSON binding; of 0.3 in its proto form).
func (c *call) eventData(ev StreamResponse) []byte {
	if c.rest && c.v03 {
		data, _ := json03(ev) // every event has a 0.3 form
		return data
	}
	var v any = rpcResponse{JSONRPC: "2.0", ID: c.req.ID, Result: c.wire(ev)}
	if c.rest {
		v = ev
	}
	data, _ := json.Marshal(v) // plain data, raw JSON checked on entry
	return data
}

// writeRPC answers with a JSON-RPC response: result, or err.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, err *RPCError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Result: result, Error: withErrorInfo(err)}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}

// params decodes the request's params into v.
func (c *call) params(v any) *RPCError {
	if len(c.req.Params) == 0 {
		return rpcErr(CodeInvalidParams, "Invalid parameters: params missing")
	}
	if err := json.Unmarshal(c.req.Params, v); err != nil {
		return rpcErr(CodeInvalidParams, "Invalid parameters: %v", err)
	}
	return nil
}

// started is what start did for a SendMessage or SendStreamingMessage.
type started struct {
	t *task
	p *SendMessageRequest
	// followUp is set for input into a running streaming session; from is
	// the index of the first event after it.
	followUp bool
	from     int
	// end is set when the message ended the session's input.
	end bool
}

// start opens the task of a SendMessage or SendStreamingMessage request,
// or feeds a message into the streaming session whose task it names.
func (b *Bridge) start(c *call) (started, *RPCError) {
	var p SendMessageRequest
	if err := c.params(&p); err != nil {
		return started{}, err
	}
	m := p.Message
	switch {
	case m == nil:
		return started{}, rpcErr(CodeInvalidParams, "Invalid parameters: message missing")
	case len(m.Parts) == 0:
		return started{}, rpcErr(CodeInvalidParams, "Invalid parameters: message.parts is empty")
	case p.Configuration != nil && len(p.Configuration.TaskPushNotificationConfig) > 0 && string(p.Configuration.TaskPushNotificationConfig) != "null":
		return started{}, rpcErr(CodePushNotSupported, "push notifications are not supported")
	}
	m.Role = RoleUser
	if m.MessageID == "" {
		// Required, but a naive client leaves it out: the bridge names the
		// message rather than refuse it.
		m.MessageID = uuid.NewString()
	}
	if m.TaskID != "" {
		return b.followUp(c, &p)
	}
	e, td, rerr := c.agent(m.Metadata, p.Metadata)
	if rerr != nil {
		return started{}, rerr
	}
	action, rerr := actionOf(td, m.Metadata, p.Metadata)
	if rerr != nil {
		return started{}, rerr
	}
	input, rerr := inputOf(td.Actions[action], action, m.Parts)
	if rerr != nil {
		return started{}, rerr
	}
	req := lmosproto.NewMessage(td.ID, lmosproto.MsgInvokeAction)
	req.Name, req.Input, req.CorrelationID = action, input, req.MessageID
	req.Stream = metaBool(metaStream, m.Metadata, p.Metadata)
	ctxID := m.ContextID
	if ctxID == "" {
		ctxID = uuid.NewString()
	}
	t := newTask(ctxID, td.ID, action, *m)
	t.session, t.affordance = req.Stream, td.Actions[action]
	if err := b.tasks.add(t); err != nil {
		return started{}, rpcErr(CodeInternal, "%v", err)
	}
	actx, cancel := context.WithCancel(b.ctx)
	sess, err := b.deps.Invokers.For(e.Publisher).Invoke(actx, req)
	if err != nil {
		cancel()
		t.fail(fmt.Sprintf("invoking action %q of agent %q: %v", action, td.ID, err))
		return started{t: t, p: &p}, nil
	}
	t.sess, t.cancel = sess, cancel
	b.wg.Go(func() { b.follow(t) })
	return started{t: t, p: &p}, nil
}

// followUp feeds message p.Message into the streaming session of its
// task (LMOS streamInput; streamEnd when its metadata says
// "lmos:streamEnd": true), once the agent accepted the session.
func (b *Bridge) followUp(c *call, p *SendMessageRequest) (started, *RPCError) {
	m := p.Message
	t, ok := b.tasks.get(m.TaskID)
	switch {
	case !ok || (c.thingID != "" && t.thingID != c.thingID):
		return started{}, rpcErr(CodeTaskNotFound, "task %q not found", m.TaskID)
	case m.ContextID != "" && m.ContextID != t.contextID:
		return started{}, rpcErr(CodeInvalidParams, "message contextId %q is not the context %q of task %q", m.ContextID, t.contextID, t.id)
	case t.isDone():
		return started{}, rpcErr(CodeUnsupportedOperation, "task %q is in a terminal state; send a new message without taskId", t.id)
	case !t.session:
		return started{}, rpcErr(CodeUnsupportedOperation, "task %q takes no further input: only a streaming session does (open it with message metadata %q: true)", t.id, metaStream)
	}
	end := metaBool(metaStreamEnd, m.Metadata, p.Metadata)
	var input lmosproto.Value
	if !end || !emptyText(m.Parts) {
		var rerr *RPCError
		if input, rerr = inputOf(t.affordance, t.action, m.Parts); rerr != nil {
			return started{}, rerr
		}
	}
	select {
	case <-t.settled:
	case <-c.r.Context().Done():
		return started{}, rpcErr(CodeInternal, "the client left")
	}
	t.inputMu.Lock()
	defer t.inputMu.Unlock()
	if t.inputEnded {
		return started{}, rpcErr(CodeUnsupportedOperation, "the input of task %q has ended", t.id)
	}
	t.mu.Lock()
	m.ContextID = t.contextID
	t.addHistoryLocked(*m)
	from := t.eventCountLocked()
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.r.Context(), cancelWait)
	defer cancel()
	var err error
	if input.Present() {
		err = t.sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamInput, Input: input})
	}
	if err == nil && end {
		err = t.sess.Send(ctx, &lmosproto.Message{Type: lmosproto.MsgStreamEnd})
		t.inputEnded = true
	}
	if err != nil {
		return started{}, rpcErr(CodeUnsupportedOperation, "task %q takes no input: %v", t.id, err)
	}
	return started{t: t, p: p, followUp: true, from: from, end: end}, nil
}

// emptyText reports whether parts are text parts without text.
func emptyText(parts []Part) bool {
	for _, p := range parts {
		if p.Text == nil || *p.Text != "" {
			return false
		}
	}
	return true
}

// follow records the replies of t's invocation until it ends or the
// bridge closes.
func (b *Bridge) follow(t *task) {
	defer t.cancel()
	defer func() { _ = t.sess.Close() }()
	for {
		select {
		case m, ok := <-t.sess.Replies():
			if !ok {
				t.fail("the agent's invocation ended without a final status")
				return
			}
			t.apply(m)
		case <-b.ctx.Done():
			t.fail("the node is shutting down")
			return
		}
	}
}

// sendMessage answers with the task once it is terminal; a streaming
// session's once the agent accepted it (the first message) or at once (a
// further input; the one that ends the input once the session ended);
// with configuration.returnImmediately at once.
func (b *Bridge) sendMessage(c *call) {
	st, err := b.start(c)
	if err != nil {
		c.reply(nil, err)
		return
	}
	t := st.t
	var hl *int
	wait := t.done
	if cfg := st.p.Configuration; cfg != nil {
		hl = cfg.HistoryLength
		if cfg.ReturnImmediately {
			wait = nil
		}
	}
	switch {
	case wait == nil:
	case st.followUp && !st.end:
		wait = nil
	case t.session && !st.followUp:
		wait = t.settled
	}
	if wait != nil {
		select {
		case <-wait:
		case <-c.r.Context().Done():
			return
		case <-b.ctx.Done():
		}
	}
	s := t.snapshot(hl)
	c.reply(SendMessageResponse{Task: &s}, nil)
}

// sendStreamingMessage streams the task from its creation (a new task) or
// from the message on (a further input of a streaming session).
func (b *Bridge) sendStreamingMessage(c *call) {
	st, err := b.start(c)
	if err != nil {
		c.reply(nil, err)
		return
	}
	if st.followUp {
		b.stream(c, st.t, st.t.snapshot(nil), st.from)
		return
	}
	b.stream(c, st.t, st.t.initial, 0)
}

// stream answers with the task first and then t's events from the i-th
// on, as server-sent events each holding a JSON-RPC response, until the
// task is terminal.
func (b *Bridge) stream(c *call, t *task, first Task, i int) {
	s, err := httpapi.StartStream(c.w, httpapi.StreamConfig{KeepAlive: b.cfg.KeepAlive, WriteTimeout: b.cfg.WriteTimeout})
	if err != nil {
		return
	}
	defer s.Close()
	send := func(ev StreamResponse) bool {
		return s.Send(httpapi.Event{Data: string(c.eventData(ev))}) == nil
	}
	if !send(StreamResponse{Task: &first}) {
		return
	}
	for {
		evs, after, more, done := t.next(i)
		i = after
		for _, ev := range evs {
			if !send(ev) {
				return
			}
		}
		if done {
			return
		}
		select {
		case <-more:
		case <-s.KeepAlive():
			if s.Ping() != nil {
				return
			}
		case <-c.r.Context().Done():
			return
		case <-b.ctx.Done():
			return
		}
	}
}

// taskOf finds the task of a GetTask, CancelTask or SubscribeToTask.
func (b *Bridge) taskOf(c *call) (*task, *TaskIDRequest, *RPCError) {
	var p TaskIDRequest
	if err := c.params(&p); err != nil {
		return nil, nil, err
	}
	t, ok := b.tasks.get(p.ID)
	if !ok || (c.thingID != "" && t.thingID != c.thingID) {
		return nil, nil, rpcErr(CodeTaskNotFound, "task %q not found", p.ID)
	}
	return t, &p, nil
}

func (b *Bridge) getTask(c *call) {
	t, p, err := b.taskOf(c)
	if err != nil {
		c.reply(nil, err)
		return
	}
	s := t.snapshot(p.HistoryLength)
	c.reply(s, nil)
}

func (b *Bridge) subscribeToTask(c *call) {
	t, p, err := b.taskOf(c)
	if err != nil {
		c.reply(nil, err)
		return
	}
	if t.isDone() {
		c.reply(nil, rpcErr(CodeUnsupportedOperation, "task %q is in a terminal state", t.id))
		return
	}
	t.mu.Lock()
	first, i := t.snapshotLocked(p.HistoryLength), t.eventCountLocked()
	t.mu.Unlock()
	b.stream(c, t, first, i)
}

// cancelTask sends the LMOS cancelAction and answers with the task once
// the agent confirmed (or cancelWait passed).
func (b *Bridge) cancelTask(c *call) {
	t, p, err := b.taskOf(c)
	if err != nil {
		c.reply(nil, err)
		return
	}
	if t.isDone() {
		c.reply(nil, rpcErr(CodeTaskNotCancelable, "task %q is in a terminal state", t.id))
		return
	}
	ctx, cancel := context.WithTimeout(c.r.Context(), cancelWait)
	defer cancel()
	if t.sess != nil {
		msg := &lmosproto.Message{Type: lmosproto.MsgCancelAction, Reason: "cancelled by the A2A client"}
		if err := t.sess.Send(ctx, msg); err != nil {
			b.log.Debug("cancel task", "task", t.id, "err", err)
		}
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		c.reply(nil, rpcErr(CodeTaskNotCancelable, "agent %q did not confirm the cancellation of task %q within %v", t.thingID, t.id, cancelWait))
		return
	}
	s := t.snapshot(p.HistoryLength)
	if s.Status.State != StateCanceled {
		c.reply(nil, rpcErr(CodeTaskNotCancelable, "task %q ended %s before it could be cancelled", t.id, s.Status.State))
		return
	}
	c.reply(s, nil)
}

// listTasks lists the tasks (of the agent, at a per-agent endpoint), newest
// status first, filtered by context and state; one page of at most
// pageSize (default 50, at most 100).
func (b *Bridge) listTasks(c *call) {
	var p ListTasksRequest
	if len(c.req.Params) > 0 {
		if err := c.params(&p); err != nil {
			c.reply(nil, err)
			return
		}
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			c.reply(nil, rpcErr(CodeInvalidParams, "Invalid parameters: pageSize %d is not within 1..100", *p.PageSize))
			return
		}
		size = *p.PageSize
	}
	var list []Task
	for _, t := range b.tasks.all() {
		if c.thingID != "" && t.thingID != c.thingID {
			continue
		}
		s := t.snapshot(p.HistoryLength)
		if (p.ContextID != "" && s.ContextID != p.ContextID) || (p.Status != "" && s.Status.State != p.Status) {
			continue
		}
		if !p.IncludeArtifacts {
			s.Artifacts = nil
		}
		list = append(list, s)
	}
	sortTasks(list)
	off := 0
	if p.PageToken != "" {
		if _, err := fmt.Sscanf(p.PageToken, "%d", &off); err != nil || off < 0 || off > len(list) {
			c.reply(nil, rpcErr(CodeInvalidParams, "Invalid parameters: pageToken %q", p.PageToken))
			return
		}
	}
	end := min(off+size, len(list))
	resp := ListTasksResponse{Tasks: append([]Task{}, list[off:end]...), PageSize: size, TotalSize: len(list)}
	if end < len(list) {
		resp.NextPageToken = fmt.Sprint(end)
	}
	c.reply(resp, nil)
}

// sortTasks orders tasks by status timestamp, newest first, then id.
func sortTasks(ts []Task) {
	less := func(a, b Task) int {
		if c := strings.Compare(b.Status.Timestamp, a.Status.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	slices.SortFunc(ts, less)
}

// ImportRequest is the body of POST /api/v1/a2a/imports.
type ImportRequest struct {
	// Card is the URL of the A2A agent's card.
	Card string `json:"card"`
	// Keys are keys the operator pins (a JWK or a JWK Set): a card
	// signature by one of them verifies the card.
	Keys json.RawMessage `json:"keys,omitempty"`
	// AllowUnsigned imports a card that is unsigned or whose signatures do
	// not verify with a pinned key or a key of the card's https origin.
	AllowUnsigned bool `json:"allowUnsigned,omitempty"`
	// CardDigest, if set ("sha256:" and lowercase hex), is the SHA-256
	// the card's bytes must have: an AI Catalog trust manifest bound the
	// card to it (package aicatalog).
	CardDigest string `json:"cardDigest,omitempty"`
}

// ImportResult is the answer of POST /api/v1/a2a/imports.
type ImportResult struct {
	// ThingID is the id of the lmos:Agent published for the agent.
	ThingID string `json:"thingId"`
	// Publisher is this node.
	Publisher string `json:"publisher"`
	// Endpoint is the agent's JSON-RPC URL that calls are forwarded to.
	Endpoint string `json:"endpoint"`
	// Seq is the lmos:seq of the published TD.
	Seq uint64 `json:"seq"`
	// CardSignature is what the check of the card's signature found, as
	// the TD records it (PropCardSignature).
	CardSignature CardTrust `json:"cardSignature"`
}

func (b *Bridge) serveImport(w http.ResponseWriter, r *http.Request) {
	var req ImportRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "body: %v", err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := b.Import(ctx, req)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusBadGateway, "importing %s: %v", req.Card, err)
		}
		httpapi.WriteProblem(w, r, p)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, res)
}
