package a2abridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// KindA2A is the backend kind (directory.Local.Kind) of an imported A2A
// agent; its backend URL is the agent's card URL.
const KindA2A = "a2a"

// maxCard bounds an agent card fetched for an import.
const maxCard = 1 << 20

// maxStreamEvent bounds one event of an imported agent's stream.
const maxStreamEvent = 4 << 20

// rpcClient speaks the A2A JSON-RPC binding to one endpoint, of A2A 1.0
// or (v03) of A2A 0.3 (client03.go).
type rpcClient struct {
	http *http.Client
	url  string
	v03  bool
}

func (c *rpcClient) post(ctx context.Context, method string, params any, accept string) (*http.Response, error) {
	version := ProtocolVersion
	if c.v03 {
		version = version03
		method, params = request03(method, params)
	}
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: json.RawMessage(`"` + uuid.NewString() + `"`), Method: method, Params: mustRaw(params)})
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("A2A-Version", version)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: %s %s: %w", method, c.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("a2a: %s %s: HTTP %d: %s", method, c.url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// call makes a JSON-RPC call and decodes its result into result.
func (c *rpcClient) call(ctx context.Context, method string, params, result any) error {
	resp, err := c.post(ctx, method, params, "application/json")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStreamEvent)).Decode(&r); err != nil {
		return fmt.Errorf("a2a: %s: response: %w", method, err)
	}
	if r.Error != nil {
		return r.Error
	}
	if result == nil {
		return nil
	}
	if sent, ok := result.(*SendMessageResponse); ok && c.v03 {
		ev, err := event03Of(r.Result)
		*sent = SendMessageResponse{Task: ev.Task, Message: ev.Message}
		return err
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("a2a: %s: result: %w", method, err)
	}
	return nil
}

// stream makes a streaming JSON-RPC call and hands fn each event's result.
func (c *rpcClient) stream(ctx context.Context, method string, params any, fn func(StreamResponse) error) error {
	resp, err := c.post(ctx, method, params, httpapi.ContentTypeEventStream)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, httpapi.ContentTypeEventStream) {
		// An error before the stream opened comes as a plain response.
		var r struct {
			Error *RPCError `json:"error"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, maxStreamEvent)).Decode(&r) == nil && r.Error != nil {
			return r.Error
		}
		return fmt.Errorf("a2a: %s: answered %q, not an event stream", method, ct)
	}
	for ev, err := range httpapi.ReadEvents(resp.Body, maxStreamEvent) {
		if err != nil {
			return fmt.Errorf("a2a: %s: stream: %w", method, err)
		}
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &r); err != nil {
			return fmt.Errorf("a2a: %s: event: %w", method, err)
		}
		if r.Error != nil {
			return r.Error
		}
		if len(r.Result) == 0 || string(r.Result) == "null" {
			continue
		}
		var sr StreamResponse
		if c.v03 {
			sr, err = event03Of(r.Result)
		} else {
			err = json.Unmarshal(r.Result, &sr)
		}
		if err != nil {
			return fmt.Errorf("a2a: %s: event: %w", method, err)
		}
		if err := fn(sr); err != nil {
			return err
		}
	}
	return nil
}

// FetchCard reads the agent card at u.
func FetchCard(ctx context.Context, c *http.Client, u string) (AgentCard, error) {
	card, _, err := fetchCard(ctx, c, u)
	return card, err
}

// fetchCard reads the agent card at u; raw is its JSON as served.
func fetchCard(ctx context.Context, c *http.Client, u string) (card AgentCard, raw []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return card, nil, fmt.Errorf("a2a: card %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return card, nil, fmt.Errorf("a2a: card %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return card, nil, fmt.Errorf("a2a: card %s: HTTP %d", u, resp.StatusCode)
	}
	if raw, err = io.ReadAll(io.LimitReader(resp.Body, maxCard)); err != nil {
		return card, nil, fmt.Errorf("a2a: card %s: %w", u, err)
	}
	if err := json.Unmarshal(raw, &card); err != nil {
		return card, nil, fmt.Errorf("a2a: card %s: %w", u, err)
	}
	if card.Name == "" {
		return card, nil, fmt.Errorf("a2a: card %s: name missing", u)
	}
	return card, raw, nil
}

// jsonrpcEndpoint is the URL of the card's JSON-RPC interface (endpointOf).
func jsonrpcEndpoint(card AgentCard) (string, error) {
	u, _, err := endpointOf(card)
	return u, err
}

// Client is the node's side of imported A2A agents: it reads their cards
// and builds the backends (kind KindA2A) that forward calls to them. It is
// safe for concurrent use.
type Client struct {
	http        *http.Client
	log         *slog.Logger
	callTimeout time.Duration

	mu       sync.Mutex
	backends map[string]*Backend // by card URL
}

// ClientConfig configures a Client. The zero value of every field selects
// its default.
type ClientConfig struct {
	// CallTimeout: see DefaultCallTimeout.
	CallTimeout time.Duration
}

// Validate reports every field out of range.
func (c ClientConfig) Validate() error {
	if c.CallTimeout < 0 {
		return fmt.Errorf("a2abridge: CallTimeout %v is negative", c.CallTimeout)
	}
	return nil
}

// NewClient returns a Client.
func NewClient(cfg ClientConfig, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	o := applyOptions(opts)
	return &Client{http: o.client, log: o.log, callTimeout: cfg.CallTimeout, backends: map[string]*Backend{}}, nil
}

// Backend forwards the invocations of an imported A2A agent's action over
// A2A (interact.Backend): the input becomes a message (a string a text
// part, anything else a data part); artifact chunks of a streaming agent
// (but the last of an artifact) become actionStatus running with the chunk
// as output; the final task's
// artifacts the completed status's output; cancelAction a CancelTask.
type Backend struct {
	c       *Client
	cardURL string

	mu   sync.Mutex
	card *AgentCard
	rpc  *rpcClient
}

// Backend returns the backend of the A2A agent whose card is at cardURL
// (the backend kind KindA2A, own.Deps.Kinds); the card is the one an
// import of this process read, else read at the first call.
func (c *Client) Backend(cardURL string) (interact.Backend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if be, ok := c.backends[cardURL]; ok {
		return be, nil
	}
	if !strings.HasPrefix(cardURL, "http://") && !strings.HasPrefix(cardURL, "https://") {
		return nil, fmt.Errorf("a2a: card URL %q is not http(s)", cardURL)
	}
	be := &Backend{c: c, cardURL: cardURL}
	c.backends[cardURL] = be
	return be, nil
}

// remember makes the backend of cardURL call the agent by card, which an
// import just read and checked, rather than read the card again.
func (c *Client) remember(cardURL string, card AgentCard) error {
	endpoint, v03, err := endpointOf(card)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	be, ok := c.backends[cardURL]
	if !ok {
		be = &Backend{c: c, cardURL: cardURL}
		c.backends[cardURL] = be
	}
	be.mu.Lock()
	be.card, be.rpc = &card, &rpcClient{http: c.http, url: endpoint, v03: v03}
	be.mu.Unlock()
	return nil
}

// client returns the agent's JSON-RPC client and whether it streams.
func (be *Backend) client(ctx context.Context) (*rpcClient, bool, error) {
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.rpc == nil {
		card, err := FetchCard(ctx, be.c.http, be.cardURL)
		if err != nil {
			return nil, false, err
		}
		u, v03, err := endpointOf(card)
		if err != nil {
			return nil, false, err
		}
		be.card, be.rpc = &card, &rpcClient{http: be.c.http, url: u, v03: v03}
	}
	return be.rpc, be.card.Capabilities.Streaming != nil && *be.card.Capabilities.Streaming, nil
}

// Handle implements interact.Backend.
func (be *Backend) Handle(ctx context.Context, x *interact.Exchange) error {
	req := x.Request()
	if req.Type != lmosproto.MsgInvokeAction {
		return &lmosproto.Problem{Status: http.StatusMethodNotAllowed, Title: http.StatusText(http.StatusMethodNotAllowed),
			Detail: fmt.Sprintf("an imported A2A agent has only its action %q", ActionMessage)}
	}
	c, streaming, err := be.client(ctx)
	if err != nil {
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: err.Error()}
	}
	msg := Message{MessageID: uuid.NewString(), Role: RoleUser, Parts: []Part{TextPart("")}}
	if req.Input.Present() {
		msg.Parts = partsOf(req.Input)
	}
	params := SendMessageRequest{Message: &msg}
	r := result{x: x}
	if streaming {
		err = c.stream(ctx, MethodSendStreamingMessage, params, r.event)
	} else {
		cctx, cancel := context.WithTimeout(ctx, be.c.callTimeout)
		var resp SendMessageResponse
		err = c.call(cctx, MethodSendMessage, params, &resp)
		cancel()
		if err == nil {
			err = r.event(StreamResponse{Task: resp.Task, Message: resp.Message})
		}
	}
	if ctx.Err() != nil {
		// cancelAction, a timeout, the consumer gone: cancel the remote task.
		if r.taskID != "" {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
			if err := c.call(cctx, MethodCancelTask, TaskIDRequest{ID: r.taskID}, nil); err != nil {
				be.c.log.Debug("cancelling the task of an imported agent", "card", be.cardURL, "task", r.taskID, "err", err)
			}
			cancel()
		}
		return ctx.Err()
	}
	var rerr *RPCError
	switch {
	case errors.As(err, &rerr):
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway,
			Detail: fmt.Sprintf("the A2A agent answered error %d: %s", rerr.Code, rerr.Message)}
	case err != nil:
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: err.Error()}
	}
	return r.finish()
}

// result follows the events of an imported agent's answer.
type result struct {
	x      *interact.Exchange
	taskID string
	state  string
	status *Message
	arts   []Artifact
	reply  *Message // a message instead of a task
	// running is set once the invocation is reported running.
	running bool
}

// event records one event; running chunks are passed on at once.
func (r *result) event(ev StreamResponse) error {
	switch {
	case ev.Message != nil:
		r.reply = ev.Message
		r.state = StateCompleted
	case ev.Task != nil:
		r.taskID, r.state, r.status = ev.Task.ID, ev.Task.Status.State, ev.Task.Status.Message
		r.arts = cloneArtifacts(ev.Task.Artifacts)
	case ev.StatusUpdate != nil:
		r.state, r.status = ev.StatusUpdate.Status.State, ev.StatusUpdate.Status.Message
		if r.state == StateWorking && !r.running {
			// The consumer sees the task work (and can cancel it) before
			// any output.
			r.running = true
			return r.x.Status(lmosproto.ActionRunning, lmosproto.Value{})
		}
	case ev.ArtifactUpdate != nil:
		a := ev.ArtifactUpdate.Artifact
		merged := false
		for i := range r.arts {
			if r.arts[i].ArtifactID == a.ArtifactID && ev.ArtifactUpdate.Append {
				r.arts[i].Parts = append(r.arts[i].Parts, a.Parts...)
				merged = true
			}
		}
		if !merged {
			r.arts = append(r.arts, Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: append([]Part(nil), a.Parts...)})
		}
		// A chunk that is not the artifact's last is passed on at once; the
		// last is part of the final output only, so that an agent that
		// answers with one artifact answers in one message.
		if v, ok := valueOf(a.Parts); ok && !ev.ArtifactUpdate.LastChunk {
			r.running = true
			return r.x.Status(lmosproto.ActionRunning, v)
		}
	}
	return nil
}

// finish sends the final status of the answer.
func (r *result) finish() error {
	switch r.state {
	case StateCompleted:
		var parts []Part
		if r.reply != nil {
			parts = r.reply.Parts
		}
		for _, a := range r.arts {
			parts = append(parts, a.Parts...)
		}
		if len(parts) == 0 && r.status != nil {
			parts = r.status.Parts
		}
		v, _ := valueOf(parts)
		return r.x.Status(lmosproto.ActionCompleted, v)
	case "":
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: "the A2A agent answered neither a task nor a message"}
	}
	text := "the A2A agent's task ended " + r.state
	if r.status != nil {
		if v, ok := valueOf(r.status.Parts); ok {
			text += ": " + strings.Trim(string(v.JSON()), `"`)
		}
	}
	if !terminal(r.state) && !interrupted(r.state) {
		text = "the A2A agent's stream ended while its task was " + r.state
	}
	return r.x.Status(lmosproto.ActionFailed, lmosproto.StringValue(text))
}

// valueOf maps parts to one LMOS value: text parts are concatenated to a
// string, a single data part is its data, anything else an array of the
// parts' values (text as strings, data as is, files as their URL or
// filename). ok is false for no parts.
func valueOf(parts []Part) (lmosproto.Value, bool) {
	if len(parts) == 0 {
		return lmosproto.Value{}, false
	}
	allText := true
	var sb strings.Builder
	for _, p := range parts {
		if p.Text == nil {
			allText = false
			break
		}
		sb.WriteString(*p.Text)
	}
	if allText {
		return lmosproto.StringValue(sb.String()), true
	}
	if len(parts) == 1 && parts[0].Data != nil {
		if v, err := lmosproto.ParseValue(parts[0].Data); err == nil {
			return v, true
		}
	}
	items := make([]any, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Text != nil:
			items = append(items, *p.Text)
		case p.Data != nil:
			items = append(items, json.RawMessage(p.Data))
		case p.URL != "":
			items = append(items, map[string]string{"url": p.URL, "mediaType": p.MediaType})
		default:
			items = append(items, map[string]string{"filename": p.Filename, "mediaType": p.MediaType})
		}
	}
	v, err := lmosproto.ValueOf(items)
	return v, err == nil
}

// ActionMessage is the one action of the lmos:Agent published for an
// imported A2A agent: its input is the message (a string for a text part,
// anything else for a data part), its output the task's result.
const ActionMessage = "message"

// tdOfCard is the lmos:Agent TD of the A2A agent card at cardURL, whose
// signature check found trust.
func tdOfCard(card AgentCard, cardURL, endpoint string, trust CardTrust) (*lmosproto.TD, error) {
	td := &lmosproto.TD{
		Context:             lmosproto.LMOSContext(),
		Types:               []string{lmosproto.TypeAgent},
		ID:                  "urn:uuid:" + uuid.NewSHA1(uuid.NameSpaceURL, []byte(cardURL)).String(),
		Title:               card.Name,
		Description:         card.Description,
		Links:               []lmosproto.Link{{Href: cardURL, Rel: "describedby", Type: "application/json"}},
		SecurityDefinitions: map[string]json.RawMessage{"nosec_sc": json.RawMessage(`{"scheme":"nosec"}`)},
		Security:            []string{"nosec_sc"},
		Extra:               map[string]json.RawMessage{PropCardSignature: mustRaw(trust)},
		Actions: map[string]*lmosproto.ActionAffordance{ActionMessage: {
			Title:       "Send a message",
			Description: "Sends a message to the A2A agent " + card.Name + " (a string as a text part, anything else as a data part) and answers with its result; a streaming agent's artifact chunks arrive as running statuses.",
			Forms:       []lmosproto.Form{{Href: endpoint, Op: []string{"invokeaction"}, ContentType: "application/json"}},
		}},
	}
	if card.Provider != nil && card.Provider.Organization != "" {
		td.Metadata = &lmosproto.Metadata{Vendor: &lmosproto.Vendor{Name: card.Provider.Organization, URL: card.Provider.URL}}
	}
	for _, s := range card.Skills {
		if s.ID == "" {
			continue
		}
		c := lmosproto.Capability{ID: s.ID, Description: s.Description, Examples: s.Examples}
		if c.Description == "" {
			c.Description = s.Name
		}
		td.Capabilities = append(td.Capabilities, c)
	}
	if err := td.Validate(); err != nil {
		return nil, fmt.Errorf("a2a: the TD of card %s: %w", cardURL, err)
	}
	return td, nil
}

// Import reads the A2A agent card at req.Card, checks its signature, and
// publishes an lmos:Agent for the agent, signed by this node, whose calls
// are forwarded to the agent over A2A (backend kind KindA2A). A card whose
// signature does not verify with a pinned key (req.Keys) or a key of its
// own https origin is imported only with req.AllowUnsigned; the TD records
// which it was (PropCardSignature). Importing the same card URL again
// publishes the next version of the same Thing.
func (b *Bridge) Import(ctx context.Context, req ImportRequest) (ImportResult, error) {
	cardURL := req.Card
	if !strings.HasPrefix(cardURL, "http://") && !strings.HasPrefix(cardURL, "https://") {
		return ImportResult{}, httpapi.Problemf(http.StatusBadRequest, "card: %q is not an http(s) URL", cardURL)
	}
	var pinned []jose.JSONWebKey
	if len(req.Keys) > 0 && string(req.Keys) != "null" {
		var err error
		if pinned, err = ParseKeys(req.Keys); err != nil {
			return ImportResult{}, httpapi.Problemf(http.StatusBadRequest, "%v", err)
		}
	}
	card, raw, err := fetchCard(ctx, b.deps.Client.http, cardURL)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusBadGateway, "%v", err)
	}
	if sum := sha256.Sum256(raw); req.CardDigest != "" && req.CardDigest != "sha256:"+hex.EncodeToString(sum[:]) {
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "the card %s is not the one whose digest was signed (%s)", cardURL, req.CardDigest)
	}
	trust := b.deps.Client.verifyCard(ctx, raw, card, cardURL, pinned)
	if trust.Status != CardVerified && !req.AllowUnsigned {
		what := "is unsigned"
		if trust.Status == CardUnverified {
			what = "has no signature that verifies (" + trust.Problem + ")"
		}
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity,
			"the card %s %s: pin the signer's key (keys, lmosnode a2a import --key), or import it anyway (allowUnsigned, --allow-unsigned)", cardURL, what)
	}
	endpoint, err := jsonrpcEndpoint(card)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	td, err := tdOfCard(card, cardURL, endpoint, trust)
	if err != nil {
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	if err := b.deps.Client.remember(cardURL, card); err != nil { // calls use the card just checked
		return ImportResult{}, httpapi.Problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	e, _, err := b.deps.Publisher.Publish(ctx, td, &directory.Local{Backend: cardURL, Kind: KindA2A})
	if err != nil {
		return ImportResult{}, err
	}
	return ImportResult{ThingID: e.ThingID, Publisher: e.Publisher.String(), Endpoint: endpoint, Seq: e.Seq, CardSignature: trust}, nil
}
