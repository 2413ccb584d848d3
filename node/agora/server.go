package agora

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes of the Agora endpoints on the node's API (docs/api.md).
const (
	// PathPrefix is the root of the Agora routes.
	PathPrefix = "/agora"
	// PathProtocols serves a protocol document by its hash:
	// PathProtocols + "/{hash}".
	PathProtocols = PathPrefix + "/protocols"
	pathAgent     = PathPrefix + "/{publisher}/{id}"
)

// Defaults of Config.
const (
	// DefaultConversationTTL is how long a multi-round conversation
	// lives after its last request (its conversationExpires).
	DefaultConversationTTL = 10 * time.Minute
	// DefaultMaxConversations bounds the open conversations.
	DefaultMaxConversations = 1024
	// DefaultRoundTimeout bounds how long a request waits for the agent.
	DefaultRoundTimeout = 2 * time.Minute
	// maxBody bounds a request.
	maxBody = 4 << 20
)

// Config configures a Server. The zero value of every field selects its
// default.
type Config struct {
	// ConversationTTL: see DefaultConversationTTL.
	ConversationTTL time.Duration
	// MaxConversations: see DefaultMaxConversations.
	MaxConversations int
	// RoundTimeout: see DefaultRoundTimeout.
	RoundTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.ConversationTTL == 0 {
		c.ConversationTTL = DefaultConversationTTL
	}
	if c.MaxConversations == 0 {
		c.MaxConversations = DefaultMaxConversations
	}
	if c.RoundTimeout == 0 {
		c.RoundTimeout = DefaultRoundTimeout
	}
	return c
}

// Validate reports every field out of range.
func (c Config) Validate() error {
	if c.ConversationTTL < 0 || c.MaxConversations < 0 || c.RoundTimeout < 0 {
		return errors.New("agora: ConversationTTL, MaxConversations and RoundTimeout must not be negative")
	}
	return nil
}

// Deps are what a Server works with; all are required. They are the A2A
// bridge's: the same rule finds, shows and calls an agent.
type Deps struct {
	// Directory lists the agents the node knows.
	Directory *directory.Directory
	// Visible hides the Things this node may not see (group-scoped Things
	// of groups it is not a member of).
	Visible func(directory.Entry) bool
	// Resolver finds the agent a request addresses (own.Things).
	Resolver a2abridge.Resolver
	// TDs parses the TDs of directory entries.
	TDs a2abridge.TDs
	// Invokers calls the agent's publisher (interact.Router).
	Invokers a2abridge.Invokers
}

// Server serves every lmos:Agent the node may see as an Agora server
// (see the package documentation). It is safe for concurrent use.
type Server struct {
	deps  Deps
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	convs *Conversations
	view  atomic.Uint64
	docs  *httpapi.DocCache

	// hashes maps the protocol hashes of the agents this node may see to
	// their action, rebuilt when the directory or the view changes.
	hashesMu  sync.Mutex
	hashesRev string
	hashes    map[string]hashRef
}

// hashRef is the agent and action of a protocol hash.
type hashRef struct {
	publisher peer.ID
	thingID   string
	action    string
}

// New returns the Server of deps; log may be nil.
func New(deps Deps, cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Directory == nil || deps.Visible == nil || deps.Resolver == nil || deps.TDs == nil || deps.Invokers == nil {
		return nil, errors.New("agora: Deps.Directory, Visible, Resolver, TDs and Invokers are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, cfg: cfg, log: log, convs: NewConversations(deps.Invokers, cfg.ConversationTTL, cfg.MaxConversations),
		docs: httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 1024, MaxBytes: 16 << 20})}
	s.mux = http.NewServeMux()
	s.mux.Handle("GET "+PathProtocols+"/{hash}", s.cached(s.serveProtocol))
	s.mux.Handle("GET "+pathAgent+"/wellknown", s.cached(s.serveWellKnown))
	s.mux.HandleFunc("POST "+pathAgent, s.serveRequest)
	s.mux.HandleFunc("POST "+pathAgent+"/conversations/{conversation}", s.serveFollowUp)
	return s, nil
}

// Patterns returns the ServeMux patterns the Server serves.
func Patterns() []string {
	return []string{PathProtocols + "/{hash}", pathAgent, pathAgent + "/wellknown", pathAgent + "/conversations/{conversation}"}
}

// AgentPath is the Agora base URL path of the agent id of publisher.
func AgentPath(publisher peer.ID, id string) string {
	return PathPrefix + "/" + url.PathEscape(publisher.String()) + "/" + url.PathEscape(id)
}

// Close ends the conversations and waits for them.
func (s *Server) Close() error {
	s.convs.Close()
	return nil
}

// Refresh tells the Server that what this node may see changed (its
// group memberships): the documents are rendered again.
func (s *Server) Refresh() { s.view.Add(1) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusMethodNotAllowed, "method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// revision is the revision of the directory and of what this node may see.
func (s *Server) revision() string {
	return s.deps.Directory.Revision() + "/" + strconv.FormatUint(s.view.Load(), 10)
}

// cached serves render's documents once per revision.
func (s *Server) cached(render http.HandlerFunc) http.Handler {
	return s.docs.Handler(func(r *http.Request) (string, string, bool) {
		return r.URL.Path, s.revision(), true
	}, render)
}

// lookupHash finds the agent and action of a protocol hash among the
// agents this node may see: the index of all their hashes is built once
// per revision, so an unknown hash costs a map lookup.
func (s *Server) lookupHash(hash string) (hashRef, bool, error) {
	s.hashesMu.Lock()
	defer s.hashesMu.Unlock()
	if rev := s.revision(); rev != s.hashesRev || s.hashes == nil {
		res, err := s.deps.Directory.Search(directory.Query{Type: lmosproto.TypeAgent, Visible: s.deps.Visible})
		if err != nil {
			return hashRef{}, false, err
		}
		s.hashes = map[string]hashRef{}
		for _, e := range res.Entries {
			td, ok := s.deps.TDs.TDOf(e.Publisher, e.ThingID)
			if !ok {
				continue
			}
			for _, p := range Protocols(td) {
				s.hashes[p.Hash] = hashRef{publisher: e.Publisher, thingID: e.ThingID, action: p.Action}
			}
		}
		s.hashesRev = rev
	}
	ref, ok := s.hashes[hash]
	return ref, ok, nil
}

// serveProtocol serves the protocol document of a hash, of any agent this
// node may see.
func (s *Server) serveProtocol(w http.ResponseWriter, r *http.Request) {
	hash := r.PathValue("hash")
	ref, ok, err := s.lookupHash(hash)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "listing agents: %v", err))
		return
	}
	var td *lmosproto.TD
	if ok {
		td, ok = s.deps.TDs.TDOf(ref.publisher, ref.thingID)
	}
	if ok {
		if text := Document(td, ref.action); Hash(text) == hash {
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			_, _ = w.Write([]byte(text))
			return
		}
	}
	httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "no agent this node knows has the protocol %q", hash))
}

// serveWellKnown answers GET {base}/wellknown (§9): each protocol hash of
// the agent with its document as the one source.
func (s *Server) serveWellKnown(w http.ResponseWriter, r *http.Request) {
	_, td, p := s.agentOf(r, false)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	out := map[string][]string{}
	for _, pr := range Protocols(td) {
		out[pr.Hash] = []string{pr.Text}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// agentOf resolves the agent of a per-agent route by the node's rule (a
// group-scoped agent of a group this node is not in is not found).
func (s *Server) agentOf(r *http.Request, call bool) (directory.Entry, *lmosproto.TD, *lmosproto.Problem) {
	return ResolveAgent(r.Context(), s.deps.Resolver, s.deps.TDs, r.PathValue("publisher"), r.PathValue("id"), call)
}

// ResolveAgent finds the lmos:Agent id of publisher (its string form) by
// the node's rule; call tells that the agent is to be called.
func ResolveAgent(ctx context.Context, res a2abridge.Resolver, tds a2abridge.TDs, publisher, id string, call bool) (directory.Entry, *lmosproto.TD, *lmosproto.Problem) {
	pub, err := lmosproto.ParsePublisher(publisher)
	if err != nil {
		return directory.Entry{}, nil, httpapi.Problemf(http.StatusNotFound, "no agent of publisher %q: %v", publisher, err)
	}
	e, err := res.Resolve(ctx, id, pub, call)
	if err != nil {
		var p *lmosproto.Problem
		if !errors.As(err, &p) {
			p = httpapi.Problemf(http.StatusInternalServerError, "resolving agent %q: %v", id, err)
		}
		return e, nil, p
	}
	td, ok := tds.TDOf(e.Publisher, e.ThingID)
	if !ok || !td.IsAgent() {
		return e, nil, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s is not an lmos:Agent", id, e.Publisher)
	}
	return e, td, nil
}

// Request is an Agora request (§6.1); other members are ignored.
type Request struct {
	Body         json.RawMessage `json:"body"`
	ProtocolHash *string         `json:"protocolHash"`
	Multiround   bool            `json:"multiround"`
	// End ("lmos:end": true) ends a conversation's input.
	End bool `json:"lmos:end"`
}

// Response is an Agora response (§6.2).
type Response struct {
	Status              string `json:"status"`
	Body                any    `json:"body,omitempty"`
	Error               string `json:"error,omitempty"`
	ConversationID      string `json:"conversationId,omitempty"`
	ConversationExpires int64  `json:"conversationExpires,omitempty"`
}

// failure answers an Agora-level error (§10.2): HTTP 200.
func failure(w http.ResponseWriter, format string, args ...any) {
	httpapi.WriteJSON(w, http.StatusOK, Response{Status: "failure", Error: fmt.Sprintf(format, args...)})
}

func readRequest(w http.ResponseWriter, r *http.Request) (Request, bool) {
	var req Request
	body, p := httpapi.ReadBody(w, r, maxBody)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return req, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "the request is not an Agora request: %v", err))
		return req, false
	}
	return req, true
}

// serveRequest answers a request to an agent's base URL: a single round,
// or the first of a multi-round conversation.
func (s *Server) serveRequest(w http.ResponseWriter, r *http.Request) {
	e, td, p := s.agentOf(r, true)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	target := Target{Publisher: e.Publisher, ThingID: e.ThingID}
	var input lmosproto.Value
	if req.ProtocolHash != nil && *req.ProtocolHash != "" {
		action, ok := actionOfHash(td, *req.ProtocolHash)
		if !ok {
			failure(w, "Unsupported protocol")
			return
		}
		target.Action = action
		if input, p = bodyValue(req.Body); p != nil {
			failure(w, "%s", p.Detail)
			return
		}
	} else {
		var err error
		if target.Action, input, err = naturalLanguage(td, r.URL.Path+"/wellknown", req.Body); err != nil {
			failure(w, "%v", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RoundTimeout)
	defer cancel()
	if !req.Multiround {
		out, err := s.convs.Call(ctx, target, input)
		writeRound(w, out, err, Response{})
		return
	}
	cv, err := s.convs.Open(target)
	if err != nil {
		failure(w, "%v", err)
		return
	}
	cv.Protocol = req.ProtocolHash != nil && *req.ProtocolHash != ""
	out, err := cv.Round(ctx, input, req.End)
	writeRound(w, out, err, Response{ConversationID: cv.ID, ConversationExpires: cv.Expires().Unix()})
}

// serveFollowUp answers a request of a multi-round conversation (§7.2).
func (s *Server) serveFollowUp(w http.ResponseWriter, r *http.Request) {
	e, td, p := s.agentOf(r, true)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	cv, expired := s.convs.Get(r.PathValue("conversation"))
	switch {
	case expired:
		failure(w, "Conversation expired")
		return
	case cv == nil || cv.Target.Publisher != e.Publisher || cv.Target.ThingID != e.ThingID:
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "no conversation %q with this agent", r.PathValue("conversation")))
		return
	}
	req, ok := readRequest(w, r)
	if !ok {
		return
	}
	if req.ProtocolHash != nil {
		// §7.2: a follow-up names no protocol; changing it is malformed.
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "a follow-up request must not include protocolHash"))
		return
	}
	var input lmosproto.Value
	switch {
	case cv.Protocol:
		if input, p = bodyValue(req.Body); p != nil {
			failure(w, "%s", p.Detail)
			return
		}
	case len(req.Body) > 0 && string(req.Body) != "null":
		text, err := bodyText(req.Body)
		if err == nil {
			input, err = a2abridge.TextInput(td.Actions[cv.Target.Action], cv.Target.Action, text)
		}
		if err != nil {
			failure(w, "%v", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RoundTimeout)
	defer cancel()
	out, err := cv.Round(ctx, input, req.End)
	writeRound(w, out, err, Response{ConversationID: cv.ID, ConversationExpires: cv.Expires().Unix()})
}

// actionOfHash is the action of td whose protocol has hash.
func actionOfHash(td *lmosproto.TD, hash string) (string, bool) {
	for _, p := range Protocols(td) {
		if p.Hash == hash {
			return p.Action, true
		}
	}
	return "", false
}

// FreeTextAction is the action of td that natural language goes to: the
// A2A bridge's rule (a2abridge.TextAction), the agent's only action. An
// agent of several actions is called by naming one: base is where its
// protocols are listed.
func FreeTextAction(td *lmosproto.TD, base string) (string, error) {
	action, err := a2abridge.TextAction(td)
	if err != nil && len(td.Actions) > 1 {
		return "", fmt.Errorf("natural language goes to an agent's only action, and agent %q has %d: name one by its protocolHash (see %s)", td.ID, len(td.Actions), base)
	}
	return action, err
}

// naturalLanguage maps a request without protocol to the agent's
// free-text action, as the A2A bridge maps a text message.
func naturalLanguage(td *lmosproto.TD, base string, body json.RawMessage) (string, lmosproto.Value, error) {
	action, err := FreeTextAction(td, base)
	if err != nil {
		return "", lmosproto.Value{}, err
	}
	text, err := bodyText(body)
	if err != nil {
		return "", lmosproto.Value{}, err
	}
	input, err := a2abridge.TextInput(td.Actions[action], action, text)
	return action, input, err
}

// bodyText is the text of a body: a string, or the JSON text of an object.
func bodyText(body json.RawMessage) (string, error) {
	var text string
	if err := json.Unmarshal(body, &text); err == nil {
		return text, nil
	}
	if len(body) == 0 || string(body) == "null" {
		return "", errors.New("missing field 'body'")
	}
	return string(body), nil
}

// bodyValue is the input of a request under a protocol: its body as is
// (absent without one).
func bodyValue(body json.RawMessage) (lmosproto.Value, *lmosproto.Problem) {
	if len(body) == 0 {
		return lmosproto.Value{}, nil
	}
	v, err := lmosproto.ParseValue(body)
	if err != nil {
		return v, httpapi.Problemf(http.StatusBadRequest, "body: %v", err)
	}
	return v, nil
}

// writeRound answers a round: its output in the body, or the agent's
// failure as a protocol-level error in the body (§10.3).
func writeRound(w http.ResponseWriter, out []lmosproto.Value, err error, resp Response) {
	resp.Status = "success"
	switch {
	case err != nil:
		resp.Body = map[string]string{"error": ProblemOf(err).Error()}
	case len(out) == 1:
		resp.Body = out[0]
	case len(out) > 1:
		resp.Body = out
	}
	httpapi.WriteJSON(w, http.StatusOK, resp)
}
