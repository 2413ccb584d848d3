package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"rsc.io/qr"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

//go:embed web
var webFS embed.FS

// Paths of the console's API routes.
const (
	StreamPath = "/api/v1/console/stream"
	QRPath     = "/api/v1/console/qr"
	assetDir   = "/console/"
)

// Deps are what the console works with: nothing yet. The API whose
// routes the stream reads is given to Routes, since the API's mux holds
// the console's routes itself.
type Deps struct{}

// Config configures the console. The zero value is the default.
type Config struct {
	// Sources are the GET routes of the API whose JSON answers the stream
	// sends, each when it changes. Default DefaultSources.
	Sources []string `json:"sources,omitempty"`
	// Interval is how often the stream reads its sources. Default 1 s.
	Interval time.Duration `json:"interval,omitempty"`
	// KeepAlive is the period of the stream's comment lines. Default 15 s.
	KeepAlive time.Duration `json:"keepAlive,omitempty"`
}

// DefaultSources are the routes the console's views of the node, its
// peers, its groups and its own Things show.
var DefaultSources = []string{"/api/v1/node", "/api/v1/peers", "/api/v1/groups", "/api/v1/things"}

// Validate reports a bad setting.
func (c Config) Validate() error {
	if c.Interval < 0 || c.KeepAlive < 0 {
		return errors.New("console: interval and keepAlive must not be negative")
	}
	for _, s := range c.Sources {
		if !strings.HasPrefix(s, "/api/") {
			return fmt.Errorf("console: source %q is not an API route (/api/…)", s)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if len(c.Sources) == 0 {
		c.Sources = DefaultSources
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 15 * time.Second
	}
	return c
}

// Option adjusts a Console.
type Option func(*Console)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *Console) { c.log = l } }

// Console serves the pages (Assets) and the console's API routes
// (Routes).
type Console struct {
	deps   Deps
	cfg    Config
	log    *slog.Logger
	assets http.Handler
	done   chan struct{}
}

// New builds the console.
func New(deps Deps, cfg Config, opts ...Option) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c := &Console{deps: deps, cfg: cfg.withDefaults(), log: slog.Default(), done: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	files := http.FileServerFS(sub)
	// The file server's 404 is plain text: AsProblems makes it a problem
	// (on the request's own path).
	c.assets = httpapi.AsProblems(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The pages load nothing from elsewhere, and no other site may
		// frame them.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		// / is index.html; /console/x is x.
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, assetDir), "/")
		files.ServeHTTP(w, r2)
	}))
	return c, nil
}

// IsAsset reports whether r asks for a page of the console: GET or HEAD of
// / or of a file below /console/. They hold nothing of the node, so a node
// with a token serves them without one: the page then asks for the token.
func IsAsset(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, assetDir)
}

// Assets serves the pages: / and /console/….
func (c *Console) Assets() http.Handler { return c.assets }

// Patterns are the console's API routes, for the parent mux.
func Patterns() []string { return []string{"GET " + StreamPath, "POST " + QRPath} }

// Routes serves the console's API routes (Patterns); the stream reads its
// sources from api, the API's handler inside its access guard.
func (c *Console) Routes(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StreamPath, func(w http.ResponseWriter, r *http.Request) { c.stream(api, w, r) })
	mux.HandleFunc("POST "+QRPath, c.qr)
	return mux
}

// Close ends the open streams.
func (c *Console) Close() error {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return nil
}

// stream sends, as event type <source route>, the JSON answer of each
// source when it differs from the last one sent: first all of them, then
// the changes. A source that fails sends its problem once, as the answer.
func (c *Console) stream(api http.Handler, w http.ResponseWriter, r *http.Request) {
	s, err := httpapi.StartStream(w, httpapi.StreamConfig{Retry: 2 * time.Second, KeepAlive: c.cfg.KeepAlive, WriteTimeout: 2 * c.cfg.KeepAlive})
	if err != nil {
		return
	}
	defer s.Close()
	c.log.Debug("console stream opened", "remote", r.RemoteAddr)
	defer c.log.Debug("console stream ended", "remote", r.RemoteAddr)
	last := make(map[string][]byte, len(c.cfg.Sources))
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		for _, src := range c.cfg.Sources {
			body := read(api, r, src)
			if bytes.Equal(body, last[src]) {
				continue
			}
			last[src] = body
			if err := s.Send(httpapi.Event{Type: src, Data: string(body)}); err != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case <-s.KeepAlive():
			if err := s.Ping(); err != nil {
				return
			}
		case <-tick.C:
		}
	}
}

// read answers GET src on the API as the stream's client would get it
// (its headers, so its token), and returns the body: the JSON value, or
// the problem. A route the API lacks (404, 501) is sent as its problem
// too; the page shows what it can.
func read(api http.Handler, outer *http.Request, src string) []byte {
	req, err := http.NewRequestWithContext(outer.Context(), http.MethodGet, src, nil)
	if err != nil {
		return nil
	}
	req.Host = outer.Host
	req.RemoteAddr = outer.RemoteAddr
	req.Header = outer.Header.Clone()
	req.Header.Set("Accept", "application/json")
	req.Header.Del("Last-Event-ID")
	rec := &recorder{header: http.Header{}}
	api.ServeHTTP(rec, req)
	return bytes.TrimSpace(rec.body.Bytes())
}

// recorder is the ResponseWriter of an in-process read.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// maxQRText bounds the text of a QR code (an invitation token is a few
// hundred bytes; the largest QR code holds under 3 KB).
const maxQRText = 2048

// qr answers an SVG QR code of the body's "text" (an invitation token),
// error correction level M. The text comes in a POST body, not the URL,
// so that no access log or trace records the token.
func (c *Console) qr(w http.ResponseWriter, r *http.Request) {
	body, p := httpapi.ReadBody(w, r, maxQRText+64)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	var req struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "request body: want {\"text\": \"…\"}: %v", err))
		return
	}
	text := req.Text
	if text == "" || len(text) > maxQRText {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "/text: want 1 to %d bytes, got %d", maxQRText, len(text)))
		return
	}
	code, err := qr.Encode(text, qr.M)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusBadRequest, "query parameter text: %v", err))
		return
	}
	const quiet = 4
	n := code.Size + 2*quiet
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges"><rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n, n, n)
	for y := range code.Size {
		for x := range code.Size {
			if code.Black(x, y) {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+quiet, y+quiet)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(b.String()))
}
