package interact

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/backoff"
	"github.com/lmosnode/lmosnode/node/httpapi"
	"github.com/lmosnode/lmosnode/proto"
)

// Headers the HTTP backend sends besides the W3C Trace Context headers.
const (
	// HeaderCorrelationID carries the interaction's correlationID on
	// action requests, so that a backend can tie a retried or queried
	// invocation to the consumer's.
	HeaderCorrelationID = "X-LMOS-Correlation-ID"
	// HeaderThingID carries the Thing's id on every request, for backends
	// that serve several Things under one base URL.
	HeaderThingID = "X-LMOS-Thing-ID"
)

// Media types of the HTTP backend contract.
const (
	ContentTypeEventStream = httpapi.ContentTypeEventStream
	ContentTypeNDJSON      = "application/x-ndjson"
)

// maxEvent bounds one server-sent event of a backend: a value as large as
// a message may carry, and its field names.
const maxEvent = proto.MaxMessageSize + 64<<10

// DefaultPollInterval is how often the HTTP backend polls the status of a
// long-running action when the backend gives no Retry-After.
const DefaultPollInterval = 500 * time.Millisecond

// HTTPBackendConfig configures an HTTP backend. URL is required; the zero
// value of every other field selects its default.
type HTTPBackendConfig struct {
	// URL is the base URL of the service: an absolute http or https URL,
	// to which the contract's paths are appended.
	URL string
	// PollInterval: see DefaultPollInterval. A status response's
	// Retry-After (seconds) takes precedence.
	PollInterval time.Duration
}

// Validate reports every field out of range.
func (c HTTPBackendConfig) Validate() error {
	var errs []error
	if _, err := parseBackendURL(c.URL); err != nil {
		errs = append(errs, err)
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("interact: HTTPBackendConfig.PollInterval: %s is negative", c.PollInterval))
	}
	return errors.Join(errs...)
}

func (c HTTPBackendConfig) withDefaults() HTTPBackendConfig {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	return c
}

// parseBackendURL parses base, an absolute http or https URL, without its
// trailing slash.
func parseBackendURL(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("interact: backend URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("interact: backend URL %q: want an absolute http or https URL", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// HTTPBackend forwards a Thing's interactions to the organisation's HTTP
// service, given as a base URL (lmosnode publish --backend URL). The
// contract it speaks is in the package documentation ("HTTP backend
// contract"). It is safe for concurrent use.
type HTTPBackend struct {
	base   *url.URL
	cfg    HTTPBackendConfig
	client *http.Client
	log    *slog.Logger
}

// NewHTTPBackend returns the backend for the service at cfg.URL. It uses
// the options WithLogger and WithHTTPClient.
func NewHTTPBackend(cfg HTTPBackendConfig, opts ...Option) (*HTTPBackend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	u, _ := parseBackendURL(cfg.URL) // checked by Validate
	o := newOptions(opts)
	if o.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		o.client = &http.Client{Transport: tr}
	}
	return &HTTPBackend{base: u, cfg: cfg, client: o.client, log: o.log}, nil
}

// url returns base/kind/name[/suffix], the name path-escaped.
func (b *HTTPBackend) url(kind, name, suffix string) string {
	u := *b.base
	u.Path += "/" + kind + "/" + name + suffix
	u.RawPath = b.base.EscapedPath() + "/" + kind + "/" + url.PathEscape(name) + suffix
	return u.String()
}

// Handle implements Backend.
func (b *HTTPBackend) Handle(ctx context.Context, x *Exchange) error {
	req := x.Request()
	switch req.Type {
	case proto.MsgReadProperty:
		body, err := b.do(ctx, req, http.MethodGet, b.url("properties", req.Name, ""), nil, "")
		if err != nil {
			return err
		}
		v, err := bodyValue(body)
		if err != nil {
			return err
		}
		return x.Reading(v)
	case proto.MsgWriteProperty:
		body, err := b.do(ctx, req, http.MethodPut, b.url("properties", req.Name, ""), req.Data.JSON(), proto.ContentTypeJSON)
		if err != nil {
			return err
		}
		v, err := bodyValue(body)
		if err != nil {
			return err
		}
		if !v.Present() {
			v = req.Data
		}
		return x.Reading(v)
	case proto.MsgObserveProperty:
		return b.events(ctx, x, b.url("properties", req.Name, "/observe"), x.Reading)
	case proto.MsgSubscribeEvent:
		return b.events(ctx, x, b.url("events", req.Name, ""), x.Event)
	case proto.MsgInvokeAction:
		if req.Stream && x.Inputs() != nil {
			err := b.session(ctx, x)
			if !errors.Is(err, errNoSession) {
				return err
			}
		}
		return b.invoke(ctx, x)
	}
	return notImplemented(req)
}

// errNoSession: the backend answered a session request with 415.
var errNoSession = errors.New("backend takes no session")

// newRequest builds a request with the headers every call carries.
func (b *HTTPBackend) newRequest(ctx context.Context, req *proto.Message, method, target string, body io.Reader, contentType string) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, problem(http.StatusInternalServerError, TitleInternal, "backend request: %v", err)
	}
	// canonical keys, set without Header.Set's canonicalisation
	h := hr.Header
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	h["Accept"] = []string{proto.ContentTypeJSON}
	h[keyThingID] = []string{req.ThingID}
	if req.Type == proto.MsgInvokeAction {
		h[keyCorrelationID] = []string{req.Correlation()}
	}
	if req.Traceparent != "" {
		h["Traceparent"] = []string{req.Traceparent}
		if req.Tracestate != "" {
			h["Tracestate"] = []string{req.Tracestate}
		}
	}
	return hr, nil
}

// The canonical forms of the LMOS headers.
var (
	keyThingID       = http.CanonicalHeaderKey(HeaderThingID)
	keyCorrelationID = http.CanonicalHeaderKey(HeaderCorrelationID)
)

// send performs a request; a transport failure is a 502 (backend down).
func (b *HTTPBackend) send(hr *http.Request) (*http.Response, error) {
	resp, err := b.client.Do(hr)
	if err != nil {
		if ctxErr := hr.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, problem(http.StatusBadGateway, TitleBadGateway, "the Thing's backend cannot be reached: %v", err)
	}
	return resp, nil
}

// do performs a request and returns the body of a 2xx response (nil for
// 204); any other status becomes the problem it describes.
func (b *HTTPBackend) do(ctx context.Context, req *proto.Message, method, target string, body []byte, contentType string) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	hr, err := b.newRequest(ctx, req, method, target, r, contentType)
	if err != nil {
		return nil, err
	}
	resp, err := b.send(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, responseProblem(resp, data)
	}
	return data, nil
}

// readBody reads a response body of at most proto.MaxMessageSize bytes.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= proto.MaxMessageSize {
		// the length is known (net/http holds the body to it): one
		// buffer of that size, not io.ReadAll's growing ones
		data := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return nil, problem(http.StatusBadGateway, TitleBadGateway, "reading the backend's response: %v", err)
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, proto.MaxMessageSize+1))
	if err != nil {
		return nil, problem(http.StatusBadGateway, TitleBadGateway, "reading the backend's response: %v", err)
	}
	if len(data) > proto.MaxMessageSize {
		return nil, problem(http.StatusBadGateway, TitleBadGateway, "the backend's response is larger than %d bytes", proto.MaxMessageSize)
	}
	return data, nil
}

// responseProblem is the problem a non-2xx backend response describes: its
// RFC 7807 body if it has one, else its status with the body as detail.
func responseProblem(resp *http.Response, body []byte) error {
	p := &proto.Problem{Status: resp.StatusCode}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == proto.ContentTypeProblemJSON || mt == proto.ContentTypeJSON {
		_ = json.Unmarshal(body, p)
		if p.Status < 400 || p.Status > 599 {
			p.Status = resp.StatusCode
		}
	}
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	if p.Detail == "" {
		p.Detail = "the Thing's backend answered " + resp.Status
		if s := strings.TrimSpace(string(body)); s != "" && len(s) < 1024 {
			p.Detail += ": " + s
		}
	}
	return p
}

// bodyValue parses a JSON response body; an empty body is absent.
func bodyValue(body []byte) (proto.Value, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return proto.Value{}, nil
	}
	v, err := proto.ParseValue(body)
	if err != nil {
		return proto.Value{}, problem(http.StatusBadGateway, TitleBadGateway, "the backend's response is not JSON: %v", err)
	}
	return v, nil
}

// invoke performs an ordinary invocation: POST, then 200 (done) or 201/202
// with a status URL to poll.
func (b *HTTPBackend) invoke(ctx context.Context, x *Exchange) error {
	req := x.Request()
	var body io.Reader
	if req.Input.Present() {
		body = bytes.NewReader(req.Input.JSON())
	}
	hr, err := b.newRequest(ctx, req, http.MethodPost, b.url("actions", req.Name, ""), body, proto.ContentTypeJSON)
	if err != nil {
		return err
	}
	resp, err := b.send(hr)
	if err != nil {
		return err
	}
	data, err := readBody(resp)
	resp.Body.Close()
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		out, err := bodyValue(data)
		if err != nil {
			return err
		}
		return x.Status(proto.ActionCompleted, out)
	case http.StatusCreated, http.StatusAccepted:
		loc, err := resp.Location()
		if err != nil {
			return problem(http.StatusBadGateway, TitleBadGateway, "the backend answered %s without a Location to poll", resp.Status)
		}
		return b.poll(ctx, x, loc.String(), retryAfter(resp))
	}
	if resp.StatusCode/100 == 2 {
		return problem(http.StatusBadGateway, TitleBadGateway, "the backend answered the invocation with %s", resp.Status)
	}
	return responseProblem(resp, data)
}

// actionState is the body of a status resource.
type actionState struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output,omitempty"`
}

// poll reports the status of a long-running action until it ends. When ctx
// is cancelled (cancelAction, timeout, consumer gone) it deletes the status
// resource to cancel the action at the backend.
func (b *HTTPBackend) poll(ctx context.Context, x *Exchange, statusURL string, wait time.Duration) error {
	req := x.Request()
	if err := x.Status(proto.ActionPending, proto.Value{}); err != nil {
		b.cancelRemote(req, statusURL)
		return err
	}
	var last actionState
	last.Status = proto.ActionPending
	for {
		if wait <= 0 {
			wait = b.cfg.PollInterval
		}
		if !backoff.Sleep(ctx, wait) {
			b.cancelRemote(req, statusURL)
			return ctx.Err()
		}
		hr, err := b.newRequest(ctx, req, http.MethodGet, statusURL, nil, "")
		if err != nil {
			return err
		}
		resp, err := b.send(hr)
		if err != nil {
			if ctx.Err() != nil {
				b.cancelRemote(req, statusURL)
			}
			return err
		}
		data, err := readBody(resp)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode/100 != 2 {
			return responseProblem(resp, data)
		}
		wait = retryAfter(resp)
		var st actionState
		if err := json.Unmarshal(data, &st); err != nil {
			return problem(http.StatusBadGateway, TitleBadGateway, "the backend's action status is not a status object: %v", err)
		}
		switch st.Status {
		case proto.ActionPending, proto.ActionRunning, proto.ActionCompleted, proto.ActionFailed, proto.ActionCancelled:
		default:
			return problem(http.StatusBadGateway, TitleBadGateway, "the backend's action status %q is not one of pending, running, completed, failed, cancelled", st.Status)
		}
		if st.Status == last.Status && bytes.Equal(st.Output, last.Output) {
			continue
		}
		last = st
		out, err := bodyValue(st.Output)
		if err != nil {
			return err
		}
		if err := x.Status(st.Status, out); err != nil {
			b.cancelRemote(req, statusURL)
			return err
		}
		switch st.Status {
		case proto.ActionCompleted, proto.ActionFailed, proto.ActionCancelled:
			return nil
		}
	}
}

// cancelRemote deletes a status resource, which cancels the action at the
// backend. It runs after the interaction's context is done, so it has a
// short context of its own.
func (b *HTTPBackend) cancelRemote(req *proto.Message, statusURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hr, err := b.newRequest(ctx, req, http.MethodDelete, statusURL, nil, "")
	if err != nil {
		return
	}
	resp, err := b.client.Do(hr)
	if err != nil {
		b.log.Warn("cancelling a backend action failed", "url", statusURL, "err", err)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.log.Warn("backend refused to cancel an action", "url", statusURL, "status", resp.StatusCode)
	}
}

// retryAfter is a response's Retry-After in seconds, 0 if none.
func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// events relays a server-sent event stream: every event's data is one
// JSON value, sent with emit.
func (b *HTTPBackend) events(ctx context.Context, x *Exchange, target string, emit func(proto.Value) error) error {
	req := x.Request()
	hr, err := b.newRequest(ctx, req, http.MethodGet, target, nil, "")
	if err != nil {
		return err
	}
	hr.Header.Set("Accept", ContentTypeEventStream)
	resp, err := b.send(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := readBody(resp)
		return responseProblem(resp, data)
	}
	err = eachEvent(resp.Body, func(ev httpapi.Event) error {
		v, err := proto.ParseValue([]byte(ev.Data))
		if err != nil {
			return problem(http.StatusBadGateway, TitleBadGateway, "the backend's event data is not JSON: %v", err)
		}
		return emit(v)
	})
	if ctx.Err() != nil {
		return nil // the last subscriber left
	}
	if err != nil {
		if errors.Is(err, ErrSessionClosed) {
			return nil
		}
		var p *proto.Problem
		if errors.As(err, &p) {
			return p
		}
		return problem(http.StatusBadGateway, TitleBadGateway, "the backend's event stream broke: %v", err)
	}
	return problem(http.StatusBadGateway, TitleBadGateway, "the backend ended the event stream")
}

// eachEvent calls fn for every event of a backend's event stream until the
// stream ends, fn fails (its error) or reading fails.
func eachEvent(r io.Reader, fn func(httpapi.Event) error) error {
	for ev, err := range httpapi.ReadEvents(r, maxEvent) {
		if err != nil {
			return fmt.Errorf("event stream: %w", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

// session runs a streaming session: the request body is NDJSON (the
// invocation's input, then every streamInput chunk; it ends at streamEnd),
// the response a server-sent event stream of output chunks. A backend that
// answers 415 takes no session: errNoSession, and the caller invokes the
// action the ordinary way.
func (b *HTTPBackend) session(ctx context.Context, x *Exchange) error {
	req := x.Request()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	hr, err := b.newRequest(ctx, req, http.MethodPost, b.url("actions", req.Name, ""), pr, ContentTypeNDJSON)
	if err != nil {
		return err
	}
	hr.Header.Set("Accept", ContentTypeEventStream)
	// the request body writer: owned here, ended by cancel (pipe closed).
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeSessionInput(ctx, pw, x)
	}()
	defer func() { cancel(); _ = pr.Close(); <-writerDone }()

	resp, err := b.send(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusUnsupportedMediaType:
		return errNoSession
	case resp.StatusCode != http.StatusOK || mt != ContentTypeEventStream:
		data, _ := readBody(resp)
		if resp.StatusCode/100 == 2 {
			return problem(http.StatusBadGateway, TitleBadGateway, "the backend answered a session with %s %s, want %s", resp.Status, mt, ContentTypeEventStream)
		}
		return responseProblem(resp, data)
	}
	if err := x.Accept(); err != nil {
		return err
	}
	done := false
	err = eachEvent(resp.Body, func(ev httpapi.Event) error {
		ended, err := sessionEvent(x, ev)
		done = done || ended
		return err
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		var p *proto.Problem
		if errors.As(err, &p) || errors.Is(err, ErrSessionClosed) {
			return err
		}
		return problem(http.StatusBadGateway, TitleBadGateway, "the backend's session stream broke: %v", err)
	case !done:
		return x.Status(proto.ActionCompleted, proto.Value{})
	}
	return nil
}

// writeSessionInput writes the body of x's streaming session to pw, one
// JSON value a line: the invocation's input, then every input chunk; the
// end of the chunks closes pw, the end of ctx closes it with ctx's error.
func writeSessionInput(ctx context.Context, pw *io.PipeWriter, x *Exchange) {
	w := bufio.NewWriter(pw)
	line := func(v proto.Value) error {
		if _, err := w.Write(v.JSON()); err != nil {
			return err
		}
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
		return w.Flush()
	}
	if in := x.Request().Input; in.Present() {
		if err := line(in); err != nil {
			return
		}
	}
	// chunks come only after Accept, that is after the backend's
	// response headers
	for {
		select {
		case v, ok := <-x.Inputs():
			if !ok {
				_ = pw.Close()
				return
			}
			if err := line(v); err != nil {
				return
			}
		case <-ctx.Done():
			_ = pw.CloseWithError(ctx.Err())
			return
		}
	}
}

// sessionEvent hands the event ev of a backend's session stream to x: an
// output chunk (running status), completed or failed; done reports an
// event that ends the session. Unknown event types are ignored, as SSE
// wants.
func sessionEvent(x *Exchange, ev httpapi.Event) (done bool, err error) {
	switch ev.Type {
	case "", "message", "output":
		v, err := proto.ParseValue([]byte(ev.Data))
		if err != nil {
			return false, problem(http.StatusBadGateway, TitleBadGateway, "the backend's output chunk is not JSON: %v", err)
		}
		return false, x.Status(proto.ActionRunning, v)
	case proto.ActionCompleted:
		v, err := bodyValue([]byte(ev.Data))
		if err != nil {
			return false, err
		}
		return true, x.Status(proto.ActionCompleted, v)
	case proto.ActionFailed:
		p := &proto.Problem{}
		if json.Unmarshal([]byte(ev.Data), p) != nil || p.Status < 400 || p.Status > 599 {
			p = problem(http.StatusInternalServerError, TitleInternal, "%s", ev.Data)
		}
		return true, p
	}
	return false, nil
}
