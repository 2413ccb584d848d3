package aitp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/agora"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Routes of the AITP endpoints (AITP-T01, the Threads API) on the node's
// API; {agent} is PathPrefix + "/{publisher}/{id}".
const (
	PathPrefix = "/aitp"
	pathAgent  = PathPrefix + "/{publisher}/{id}"
)

// Defaults of Config.
const (
	// DefaultThreadTTL is how long a thread is kept after its last message.
	DefaultThreadTTL = 30 * time.Minute
	// DefaultMaxThreads bounds the threads kept.
	DefaultMaxThreads = 1024
	// DefaultMaxMessages bounds the messages of one thread.
	DefaultMaxMessages = 1000
	// DefaultReplyTimeout bounds how long a posted message waits for the
	// agent's reply.
	DefaultReplyTimeout = 2 * time.Minute
	maxBody             = 4 << 20
)

// Config configures a Server; the zero value of every field selects its
// default.
type Config struct {
	ThreadTTL    time.Duration
	MaxThreads   int
	MaxMessages  int
	ReplyTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.ThreadTTL == 0 {
		c.ThreadTTL = DefaultThreadTTL
	}
	if c.MaxThreads == 0 {
		c.MaxThreads = DefaultMaxThreads
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	if c.ReplyTimeout == 0 {
		c.ReplyTimeout = DefaultReplyTimeout
	}
	return c
}

// Deps are what a Server works with: the Agora server's (the A2A
// bridge's), all required.
type Deps = agora.Deps

// Server serves every lmos:Agent the node may see as an AITP agent over
// the Threads API transport (see the package documentation). It is safe
// for concurrent use.
type Server struct {
	deps  Deps
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	convs *agora.Conversations
	view  atomic.Uint64
	docs  *httpapi.DocCache

	mu      sync.Mutex
	threads map[string]*thread
}

// thread is a thread and the LMOS conversation it maps to.
type thread struct {
	post sync.Mutex // one message (and the agent's reply) at a time
	mu   sync.Mutex // guards t
	t    Thread
	conv *agora.Conversation
	td   *lmosproto.TD
}

// New returns the Server of deps; log may be nil.
func New(deps Deps, cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.ThreadTTL < 0 || cfg.MaxThreads < 0 || cfg.MaxMessages < 0 || cfg.ReplyTimeout < 0 {
		return nil, errors.New("aitp: ThreadTTL, MaxThreads, MaxMessages and ReplyTimeout must not be negative")
	}
	if deps.Directory == nil || deps.Visible == nil || deps.Resolver == nil || deps.TDs == nil || deps.Invokers == nil {
		return nil, errors.New("aitp: Deps.Directory, Visible, Resolver, TDs and Invokers are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, cfg: cfg, log: log, threads: map[string]*thread{},
		convs: agora.NewConversations(deps.Invokers, cfg.ThreadTTL, cfg.MaxThreads),
		docs:  httpapi.NewDocCache(httpapi.DocConfig{MaxEntries: 1024, MaxBytes: 8 << 20})}
	s.mux = http.NewServeMux()
	s.mux.Handle("GET "+pathAgent, s.docs.Handler(func(r *http.Request) (string, string, bool) {
		return r.URL.Path, s.deps.Directory.Revision() + "/" + strconv.FormatUint(s.view.Load(), 10), true
	}, http.HandlerFunc(s.serveAgent)))
	for _, p := range []string{"/v1/thread", "/v1/threads"} {
		s.mux.HandleFunc("POST "+pathAgent+p, s.serveCreateThread)
	}
	for _, m := range []string{"GET ", "POST "} {
		s.mux.HandleFunc(m+pathAgent+"/v1/threads/{thread}", s.serveThread)
	}
	s.mux.HandleFunc("POST "+pathAgent+"/v1/threads/{thread}/messages", s.serveCreateMessage)
	s.mux.HandleFunc("GET "+pathAgent+"/v1/threads/{thread}/messages", s.serveMessages)
	return s, nil
}

// Patterns returns the ServeMux patterns the Server serves.
func Patterns() []string {
	return []string{pathAgent, pathAgent + "/v1/thread", pathAgent + "/v1/threads",
		pathAgent + "/v1/threads/{thread}", pathAgent + "/v1/threads/{thread}/messages"}
}

// AgentPath is the AITP endpoint (agent id) path of the agent id of
// publisher.
func AgentPath(publisher peer.ID, id string) string {
	return strings.Replace(agora.AgentPath(publisher, id), agora.PathPrefix, PathPrefix, 1)
}

// Close ends the threads' conversations.
func (s *Server) Close() error {
	s.convs.Close()
	return nil
}

// Refresh tells the Server that what this node may see changed.
func (s *Server) Refresh() { s.view.Add(1) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		writeError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// agentOf resolves the agent of r (call: to be called), answering the
// error itself.
func (s *Server) agentOf(w http.ResponseWriter, r *http.Request, call bool) (directory.Entry, *lmosproto.TD, bool) {
	e, td, p := agora.ResolveAgent(r.Context(), s.deps.Resolver, s.deps.TDs, r.PathValue("publisher"), r.PathValue("id"), call)
	if p != nil {
		writeProblem(w, p)
		return e, nil, false
	}
	return e, td, true
}

func writeProblem(w http.ResponseWriter, p *lmosproto.Problem) {
	status, code := p.Status, CodeAgentError
	switch {
	case status == http.StatusNotFound:
		code = CodeNotFound
	case status == 0:
		status = http.StatusBadGateway
	case status < 500:
		code = CodeInvalidRequest
	}
	writeError(w, status, code, "", p.Error())
}

func capabilitiesOf(urls []string) []Capability {
	out := make([]Capability, 0, len(urls))
	for _, u := range urls {
		out = append(out, Capability{Schema: u})
	}
	return out
}

// serveAgent describes the agent: its capabilities, declared and not.
func (s *Server) serveAgent(w http.ResponseWriter, r *http.Request) {
	e, td, ok := s.agentOf(w, r, false)
	if !ok {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, AgentInfo{ID: td.ID, Name: td.Title, Description: td.Description, Transport: "AITP-T01",
		Threads:      AgentPath(e.Publisher, e.ThingID) + "/v1/threads",
		Capabilities: capabilitiesOf(Declared(td)), Unsupported: capabilitiesOf(Unsupported(td))})
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, p := httpapi.ReadBody(w, r, maxBody)
	if p != nil {
		writeError(w, p.Status, CodeInvalidRequest, "", p.Detail)
		return false
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "", fmt.Sprintf("body: %v", err))
		return false
	}
	return true
}

// serveCreateThread creates a thread with the client's actors and the
// agent, and posts its initial messages.
func (s *Server) serveCreateThread(w http.ResponseWriter, r *http.Request) {
	e, td, ok := s.agentOf(w, r, true)
	if !ok {
		return
	}
	var req createThread
	if !readJSON(w, r, &req) {
		return
	}
	action, err := agora.FreeTextAction(td, "the Agora endpoint "+agora.AgentPath(e.Publisher, e.ThingID)+"/wellknown")
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "", err.Error())
		return
	}
	t := Thread{ID: "thread_" + strings.ReplaceAll(uuid.NewString(), "-", ""), Object: "thread", CreatedAt: time.Now().Unix(), Messages: []Message{}}
	for i, a := range req.Metadata.Actors {
		caps := make([]Capability, 0, len(a.Capabilities))
		for _, c := range a.Capabilities {
			u, ok := stringOf(c)
			if !ok {
				writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("metadata.actors[%d].capabilities", i), "a capability is a schema URL (or {\"schema\": URL})")
				return
			}
			caps = append(caps, Capability{Schema: u})
		}
		t.Metadata.Actors = append(t.Metadata.Actors, Actor{ID: a.ID, ClientID: a.ClientID, Capabilities: caps})
	}
	t.Metadata.Actors = append(t.Metadata.Actors, Actor{ID: td.ID, Capabilities: capabilitiesOf(Declared(td))})
	conv, err := s.convs.Open(agora.Target{Publisher: e.Publisher, ThingID: e.ThingID, Action: action})
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, CodeInvalidRequest, "", err.Error())
		return
	}
	th := &thread{t: t, conv: conv, td: td}
	s.mu.Lock()
	now := time.Now()
	for id, old := range s.threads {
		if old.conv.Expired(now) {
			delete(s.threads, id) // its conversation is gone from convs
		}
	}
	s.threads[t.ID] = th
	s.mu.Unlock()
	for i, raw := range req.Messages {
		content, ok := initialContent(raw)
		if !ok {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("messages[%d]", i), "a message is a string (or {role, content})")
			return
		}
		if _, ok := s.post(w, r, th, content); !ok {
			return
		}
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	httpapi.WriteJSON(w, http.StatusOK, th.t)
}

// initialContent is the content of an initial message: a string, or an
// object {role, content}.
func initialContent(raw json.RawMessage) ([]string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, true
	}
	var m createMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return stringsOf(m.Content)
}

// threadOf finds the agent of r (agentOf, call as there) and its thread
// of r; an expired thread is dropped.
func (s *Server) threadOf(w http.ResponseWriter, r *http.Request, call bool) (*thread, bool) {
	e, _, ok := s.agentOf(w, r, call)
	if !ok {
		return nil, false
	}
	id := r.PathValue("thread")
	s.mu.Lock()
	th, ok := s.threads[id]
	if ok && th.conv.Expired(time.Now()) {
		delete(s.threads, id)
		ok = false
	}
	s.mu.Unlock()
	if !ok || th.conv.Target.Publisher != e.Publisher || th.conv.Target.ThingID != e.ThingID {
		writeError(w, http.StatusNotFound, CodeNotFound, "thread_id", fmt.Sprintf("no thread %q with this agent", id))
		return nil, false
	}
	return th, true
}

// serveThread retrieves a thread.
func (s *Server) serveThread(w http.ResponseWriter, r *http.Request) {
	th, ok := s.threadOf(w, r, false)
	if !ok {
		return
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	httpapi.WriteJSON(w, http.StatusOK, th.t)
}

// serveMessages lists a thread's messages, oldest first (order=desc:
// newest first).
func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	th, ok := s.threadOf(w, r, false)
	if !ok {
		return
	}
	th.mu.Lock()
	data := append([]Message{}, th.t.Messages...)
	th.mu.Unlock()
	if r.URL.Query().Get("order") == "desc" {
		slices.Reverse(data)
	}
	l := MessageList{Object: "list", Data: data}
	if len(data) > 0 {
		l.FirstID, l.LastID = data[0].ID, data[len(data)-1].ID
	}
	httpapi.WriteJSON(w, http.StatusOK, l)
}

// serveCreateMessage posts a user message and answers with it once the
// agent's reply is in the thread.
func (s *Server) serveCreateMessage(w http.ResponseWriter, r *http.Request) {
	th, ok := s.threadOf(w, r, true)
	if !ok {
		return
	}
	var req createMessage
	if !readJSON(w, r, &req) {
		return
	}
	switch {
	case req.Role != "user":
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "role", fmt.Sprintf("role %q: a client posts the messages of role \"user\"; the agent's are \"assistant\"", req.Role))
		return
	case len(req.Attachments) > 0:
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "attachments", "attachments are not supported: the node has no files API")
		return
	}
	content, ok := stringsOf(req.Content)
	if !ok || len(content) == 0 {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "content", "content is a string or an array of strings")
		return
	}
	if m, ok := s.post(w, r, th, content); ok {
		httpapi.WriteJSON(w, http.StatusOK, m)
	}
}

// post adds a user message of content to th and the agent's reply after
// it, and returns the user message; on an error it answers it and returns
// false. The thread can be read meanwhile.
func (s *Server) post(w http.ResponseWriter, r *http.Request, th *thread, content []string) (Message, bool) {
	for i, c := range content {
		u := messageCapability(c)
		if u == "" {
			continue
		}
		if !supports(th.td, u) {
			writeError(w, http.StatusBadRequest, CodeCapabilityNotSupported, fmt.Sprintf("content[%d]", i),
				fmt.Sprintf("agent %q does not support the capability %s (it declares %s: %s)", th.td.ID, u, PropCapabilities, strings.Join(Declared(th.td), ", ")))
			return Message{}, false
		}
		if err := checkMessage(u, c); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidCapabilityMessage, fmt.Sprintf("content[%d]", i),
				fmt.Sprintf("the message does not match the schema of %s: %v", u, err))
			return Message{}, false
		}
	}
	action := th.conv.Target.Action
	input, err := a2abridge.TextInput(th.td.Actions[action], action, strings.Join(content, "\n"))
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "content", err.Error())
		return Message{}, false
	}
	th.post.Lock()
	defer th.post.Unlock()
	th.mu.Lock()
	if n := len(th.t.Messages); n+2 > s.cfg.MaxMessages {
		th.mu.Unlock()
		writeError(w, http.StatusConflict, CodeInvalidRequest, "", fmt.Sprintf("thread %s holds %d messages, the most this node keeps: start a new thread", th.t.ID, n))
		return Message{}, false
	}
	client := "user"
	if len(th.t.Metadata.Actors) > 1 {
		client = th.t.Metadata.Actors[0].ID
	}
	m := s.message(th, "user", client, content)
	th.t.Messages = append(th.t.Messages, m)
	th.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReplyTimeout)
	defer cancel()
	out, err := th.conv.Round(ctx, input, false)
	if err != nil {
		writeProblem(w, agora.ProblemOf(err))
		return Message{}, false
	}
	reply := make([]string, 0, len(out))
	for _, v := range out {
		var text string
		if v.Decode(&text) != nil {
			text = v.String() // a structured output travels as its JSON text
		}
		reply = append(reply, text)
	}
	th.mu.Lock()
	th.t.Messages = append(th.t.Messages, s.message(th, "assistant", th.td.ID, reply))
	th.mu.Unlock()
	return m, true
}

func (s *Server) message(th *thread, role, actor string, content []string) Message {
	return Message{ID: "msg_" + strings.ReplaceAll(uuid.NewString(), "-", ""), Object: "thread.message", CreatedAt: time.Now().Unix(),
		ThreadID: th.t.ID, Role: role, Content: content, Attachments: []Attachment{}, Metadata: MessageMetadata{Actor: actor}}
}
