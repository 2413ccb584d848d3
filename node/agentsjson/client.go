package agentsjson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// KindAgentsJSON is the backend kind (directory.Local.Kind) of a Tool
// imported from an agents.json: its backend URL is the document's URL
// with the flow's id as fragment (https://example.com/agents.json#flow).
const KindAgentsJSON = "agentsjson"

// Defaults of a ClientConfig.
const (
	// DefaultTimeout bounds one request: a document's fetch or one
	// operation's call.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxDocument bounds a fetched agents.json or OpenAPI
	// document.
	DefaultMaxDocument = 4 << 20
	// DefaultMaxResponse bounds the answer of an operation.
	DefaultMaxResponse = 4 << 20
	// maxRedirects bounds the redirects of one request, all on the
	// request's host.
	maxRedirects = 4
)

// ClientConfig configures a Client. The zero value of every field
// selects its default.
type ClientConfig struct {
	// Timeout: see DefaultTimeout.
	Timeout time.Duration
	// MaxDocument: see DefaultMaxDocument.
	MaxDocument int64
	// MaxResponse: see DefaultMaxResponse.
	MaxResponse int64
}

// Client reads agents.json and OpenAPI documents and calls the
// operations of imported flows: it builds the backends of kind
// KindAgentsJSON (own.Deps.Kinds). It is safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	http *http.Client
	log  *slog.Logger

	mu    sync.Mutex
	plans map[string]*plan // by backend URL, resolved
}

// NewClient returns a Client. Its HTTP client follows redirects on the
// same host only (at most 5), and each request is bounded by
// cfg.Timeout.
func NewClient(cfg ClientConfig, opts ...Option) (*Client, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxDocument == 0 {
		cfg.MaxDocument = DefaultMaxDocument
	}
	if cfg.MaxResponse == 0 {
		cfg.MaxResponse = DefaultMaxResponse
	}
	if cfg.Timeout < 0 || cfg.MaxDocument < 0 || cfg.MaxResponse < 0 {
		return nil, fmt.Errorf("agentsjson: ClientConfig %+v has a negative field", cfg)
	}
	o := applyOptions(opts)
	c := o.client
	if c == nil {
		c = &http.Client{CheckRedirect: httpapi.SameOriginRedirects(maxRedirects)}
	}
	return &Client{cfg: cfg, http: c, log: o.log, plans: map[string]*plan{}}, nil
}

// fetch reads the document at u (at most MaxDocument bytes, within
// Timeout).
func (c *Client) fetch(ctx context.Context, u string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.1")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(body)) > c.cfg.MaxDocument {
		return nil, fmt.Errorf("GET %s: the document is longer than %d bytes", u, c.cfg.MaxDocument)
	}
	return body, nil
}

// Backend returns the backend of a Tool imported from the flow named by
// backendURL (the document's URL, the flow's id as fragment). It reads
// the document and its sources at the first call (or takes what the
// import just read).
func (c *Client) Backend(backendURL string) (interact.Backend, error) {
	docURL, flowID, ok := strings.Cut(backendURL, "#")
	if !ok || flowID == "" || !httpURL(docURL) {
		return nil, fmt.Errorf("agentsjson: backend URL %q is not an http(s) URL with a flow id as fragment", backendURL)
	}
	return interact.BackendFunc(func(ctx context.Context, x *interact.Exchange) error {
		req := x.Request()
		if req.Type != lmosproto.MsgInvokeAction {
			return &lmosproto.Problem{Status: http.StatusMethodNotAllowed, Title: "Method Not Allowed",
				Detail: fmt.Sprintf("an imported agents.json flow only invokes its action, not %s", req.Type)}
		}
		p, err := c.plan(ctx, backendURL, docURL, flowID)
		if err != nil {
			return &lmosproto.Problem{Status: http.StatusBadGateway, Title: interact.TitleBadGateway, Detail: err.Error()}
		}
		out, err := c.run(ctx, p, req.Input)
		if err != nil {
			c.log.Debug("agents.json flow failed", "flow", flowID, "document", docURL, "err", err)
			return err
		}
		return x.Status(lmosproto.ActionCompleted, out)
	}), nil
}

// plan is the resolved plan of backendURL, read once.
func (c *Client) plan(ctx context.Context, backendURL, docURL, flowID string) (*plan, error) {
	c.mu.Lock()
	p, ok := c.plans[backendURL]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	doc, err := c.readDoc(ctx, docURL)
	if err != nil {
		return nil, err
	}
	for _, f := range doc.Flows {
		if f.ID == flowID {
			p, err := c.resolve(ctx, docURL, doc, f)
			if err != nil {
				return nil, err
			}
			c.remember(backendURL, p)
			return p, nil
		}
	}
	return nil, fmt.Errorf("agentsjson: %s has no flow %q", docURL, flowID)
}

func (c *Client) remember(backendURL string, p *plan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.plans[backendURL] = p
}

func httpURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// jsonType reports whether the Content-Type ct is JSON.
func jsonType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

var errNoOperation = errors.New("no such operation")
