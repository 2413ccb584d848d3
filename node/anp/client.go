package anp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// KindANP is the backend kind (directory.Local.Kind) of an imported ANP
// agent; its backend URL is the agent description's URL.
const KindANP = "anp"

// Bounds of the client.
const (
	// MaxDocument bounds an agent description or interface document.
	MaxDocument = 1 << 20
	// MaxResponse bounds a JSON-RPC answer of an imported agent.
	MaxResponse = 4 << 20
	// DefaultCallTimeout bounds a call of an imported agent.
	DefaultCallTimeout = 2 * time.Minute
	// signatureTTL is the expires of the node's signatures.
	signatureTTL = time.Minute
)

// Client reads ANP agent descriptions and calls imported agents, signing
// every request with the node's did:wba identity (DID-WBA, ANP-02) when
// it has one. It is safe for concurrent use.
type Client struct {
	http *http.Client
	id   *Identity
	log  *slog.Logger

	mu     sync.Mutex
	agents map[string]*imported // by description URL
}

// NewClient returns the Client that signs as id (nil: unsigned) and
// sends with hc (nil: a client of its own). Redirects are followed only
// to the same scheme, host and port.
func NewClient(id *Identity, hc *http.Client, log *slog.Logger) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	c := *hc
	c.CheckRedirect = httpapi.SameOriginRedirects(2)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{http: &c, id: id, log: log, agents: map[string]*imported{}}
}

// Do sends req with body, signed (Content-Digest with a body; @method,
// @target-uri, @authority, content-digest and content-type covered;
// created, expires and a nonce), and returns the answer.
func (c *Client) Do(req *http.Request, body []byte) (*http.Response, error) {
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.Header.Set(HeaderContentDigest, ContentDigest(body))
	}
	if c.id != nil {
		comps := []string{"@method", "@target-uri", "@authority"}
		if body != nil {
			comps = append(comps, "content-digest")
		}
		if req.Header.Get("Content-Type") != "" {
			comps = append(comps, "content-type")
		}
		var n [16]byte
		_, _ = rand.Read(n[:])
		now := time.Now()
		p := SigParams{Components: comps, Created: now, Expires: now.Add(signatureTTL),
			Nonce: base64.RawURLEncoding.EncodeToString(n[:]), KeyID: c.id.KeyID}
		if req.Host == "" {
			req.Host = req.URL.Host
		}
		if err := Sign(req, req.URL.Scheme, "sig1", p, c.id.key); err != nil {
			return nil, err
		}
	}
	return c.http.Do(req)
}

// get reads the JSON document at u, at most MaxDocument bytes.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, fmt.Errorf("anp: %q is not an http(s) URL", u)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/ld+json")
	resp, err := c.Do(req, nil)
	if err != nil {
		return nil, fmt.Errorf("anp: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocument+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("anp: GET %s: %w", u, err)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("anp: GET %s: %s", u, resp.Status)
	case len(b) > MaxDocument:
		return nil, fmt.Errorf("anp: GET %s: the document is over %d bytes", u, MaxDocument)
	}
	return b, nil
}

// OpenRPC is the part of an OpenRPC document (ANP-07's JSON-RPC
// interface) lmosnode reads.
type OpenRPC struct {
	OpenRPC string          `json:"openrpc"`
	Info    json.RawMessage `json:"info,omitempty"`
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Methods []RPCMethod `json:"methods"`
}

// RPCMethod is an OpenRPC method.
type RPCMethod struct {
	Name        string     `json:"name"`
	Summary     string     `json:"summary,omitempty"`
	Description string     `json:"description,omitempty"`
	Params      []RPCParam `json:"params"`
	Result      *RPCParam  `json:"result,omitempty"`
}

// RPCParam is an OpenRPC content descriptor.
type RPCParam struct {
	Name     string          `json:"name"`
	Required bool            `json:"required,omitempty"`
	Schema   json.RawMessage `json:"schema,omitempty"`
}

// imported is an imported agent: its JSON-RPC endpoint and methods.
type imported struct {
	ad       AgentDescription
	endpoint string
	methods  map[string]RPCMethod
}

// read fetches the description at adURL and its JSON-RPC interface.
func (c *Client) read(ctx context.Context, adURL string) (*imported, error) {
	b, err := c.get(ctx, adURL)
	if err != nil {
		return nil, err
	}
	var ad AgentDescription
	if err := json.Unmarshal(b, &ad); err != nil {
		return nil, fmt.Errorf("anp: the agent description %s: %w", adURL, err)
	}
	if ad.Name == "" {
		return nil, fmt.Errorf("anp: the agent description %s has no name", adURL)
	}
	for _, in := range append(ad.Interfaces, ad.LDInterfaces...) {
		if !strings.EqualFold(in.Protocol, "openrpc") && !strings.EqualFold(in.Protocol, "JSON-RPC") {
			continue
		}
		raw := []byte(in.Content)
		if len(raw) == 0 || string(raw) == "{}" {
			u, err := url.Parse(adURL)
			if err != nil {
				return nil, err
			}
			ref, err := u.Parse(in.URL)
			if err != nil || in.URL == "" {
				return nil, fmt.Errorf("anp: %s: the openrpc interface has neither content nor url", adURL)
			}
			if raw, err = c.get(ctx, ref.String()); err != nil {
				return nil, err
			}
		}
		return parseOpenRPC(ad, adURL, raw)
	}
	return nil, fmt.Errorf("anp: the agent description %s has no openrpc (JSON-RPC) interface, the one kind lmosnode calls", adURL)
}

// parseOpenRPC reads an OpenRPC interface of ad.
func parseOpenRPC(ad AgentDescription, adURL string, raw []byte) (*imported, error) {
	var doc OpenRPC
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("anp: %s: the openrpc interface: %w", adURL, err)
	}
	if len(doc.Servers) == 0 || len(doc.Methods) == 0 {
		return nil, fmt.Errorf("anp: %s: the openrpc interface names no server or no method", adURL)
	}
	base, _ := url.Parse(adURL)
	ep, err := base.Parse(doc.Servers[0].URL)
	if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") {
		return nil, fmt.Errorf("anp: %s: server %q is not an http(s) URL", adURL, doc.Servers[0].URL)
	}
	im := &imported{ad: ad, endpoint: ep.String(), methods: map[string]RPCMethod{}}
	for _, m := range doc.Methods {
		if m.Name == "" {
			return nil, fmt.Errorf("anp: %s: a method has no name", adURL)
		}
		im.methods[m.Name] = m
	}
	return im, nil
}

// agent returns the imported agent of adURL: the one an import of this
// process read, else read now (after a restart).
func (c *Client) agent(ctx context.Context, adURL string) (*imported, error) {
	c.mu.Lock()
	im := c.agents[adURL]
	c.mu.Unlock()
	if im != nil {
		return im, nil
	}
	im, err := c.read(ctx, adURL)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.agents[adURL] = im
	c.mu.Unlock()
	return im, nil
}

// Backend returns the backend of the agent described at adURL (kind
// KindANP, own.Deps.Kinds): each action is a JSON-RPC method, called with
// the action's input as params, signed.
func (c *Client) Backend(adURL string) (interact.Backend, error) {
	if !strings.HasPrefix(adURL, "http://") && !strings.HasPrefix(adURL, "https://") {
		return nil, fmt.Errorf("anp: description URL %q is not http(s)", adURL)
	}
	return interact.BackendFunc(func(ctx context.Context, x *interact.Exchange) error {
		return c.call(ctx, adURL, x)
	}), nil
}

// rpcResponse is a JSON-RPC 2.0 answer.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error"`
}

// call forwards the invokeAction of x to the agent's JSON-RPC endpoint.
func (c *Client) call(ctx context.Context, adURL string, x *interact.Exchange) error {
	req := x.Request()
	if req.Type != lmosproto.MsgInvokeAction {
		return &lmosproto.Problem{Status: http.StatusMethodNotAllowed, Title: http.StatusText(http.StatusMethodNotAllowed),
			Detail: "an imported ANP agent has actions only (its JSON-RPC methods)"}
	}
	bad := func(format string, args ...any) error {
		return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: fmt.Sprintf(format, args...)}
	}
	im, err := c.agent(ctx, adURL)
	if err != nil {
		return bad("%v", err)
	}
	params := json.RawMessage("{}")
	if req.Input.Present() {
		if params, err = json.Marshal(req.Input); err != nil {
			return err
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": uuid.NewString(), "method": req.Name, "params": params})
	cctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(cctx, http.MethodPost, im.endpoint, nil)
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(hr, body)
	if err != nil {
		return bad("calling %s: %v", im.endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil || len(b) > MaxResponse {
		return bad("reading the answer of %s: %v (at most %d bytes)", im.endpoint, err, MaxResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return bad("%s answered %s: %s", im.endpoint, resp.Status, clipText(b))
	}
	var rr rpcResponse
	if err := json.Unmarshal(b, &rr); err != nil {
		return bad("%s: not a JSON-RPC answer: %v", im.endpoint, err)
	}
	if rr.Error != nil {
		return bad("%s: JSON-RPC error %d: %s", im.endpoint, rr.Error.Code, rr.Error.Message)
	}
	var out lmosproto.Value
	if err := json.Unmarshal(rr.Result, &out); err != nil {
		return bad("%s: result: %v", im.endpoint, err)
	}
	return x.Status(lmosproto.ActionCompleted, out)
}

// clipText is the start of an error body, for a problem's detail.
func clipText(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.ToValidUTF8(string(b), "?")
}
