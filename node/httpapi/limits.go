package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Resource limits of an HTTP server, so that no client holds connections
// or memory without end: a bound on the time a request body takes to
// arrive and on its size (Limit), and a cap on the connections one client
// address holds open (LimitListener). Timeouts of headers and idle
// connections and the header size limit are http.Server's own fields.

// Default limits, used for a zero field of Limits or ConnLimits.
const (
	// DefaultBodyTimeout bounds the time from a request's headers to the
	// end of its body: ample for the largest body a route takes (a few
	// MiB) on a slow link, short enough that slow-body connections do
	// not pile up.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxBody is the largest request body any route takes, above
	// each route's own limit (4 MiB for an action input), so that every
	// route still answers with its own, more precise 413.
	DefaultMaxBody = 8 << 20
	// DefaultMaxConnsPerClient is the cap on the open connections of one
	// client address: a browser holds about 6 per host plus its event
	// streams and WebSockets, the CLI one or two; 64 leaves room for a
	// few users behind one NAT.
	DefaultMaxConnsPerClient = 64
)

// Limits bounds the request bodies of a handler (see Limit).
type Limits struct {
	// BodyTimeout is how long after its headers a request body may take
	// to arrive in full. Zero: DefaultBodyTimeout; negative: none.
	BodyTimeout time.Duration
	// MaxBody is the largest request body, in bytes. Zero:
	// DefaultMaxBody; negative: none.
	MaxBody int64
}

func (l Limits) withDefaults() Limits {
	if l.BodyTimeout == 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.MaxBody == 0 {
		l.MaxBody = DefaultMaxBody
	}
	return l
}

// ErrBodyTimeout is the error a request body read under Limit returns
// when the body did not arrive within Limits.BodyTimeout.
var ErrBodyTimeout = errors.New("request body did not arrive in time")

// Limit bounds the bodies of the requests next serves. A request that
// declares a Content-Length above MaxBody gets 413 at once; a longer
// chunked body fails its read with an *http.MaxBytesError (each route
// answers 413). A request that has a body gets a read deadline of
// BodyTimeout on its connection, lifted as soon as the body has been read
// to its end: a client that trickles its body is cut off (the read fails
// with ErrBodyTimeout and the connection is closed after the answer),
// while a request without a body (an event stream, a WebSocket upgrade, a
// long-poll) never has a read deadline. (http.Server lifts the deadline
// itself once the body has been read to its end, when it starts the
// background read that notices a client going away; a deadline left set
// would otherwise cancel the request's context during a long answer.) A handler that reads its body as
// a long stream (an NDJSON session) lifts both bounds with StreamBody.
// Limit must wrap the server's handler directly: the deadline is set
// through http.ResponseController on the server's ResponseWriter.
func Limit(l Limits, next http.Handler) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		if l.MaxBody > 0 && r.ContentLength > l.MaxBody {
			WriteProblem(w, r, Problemf(http.StatusRequestEntityTooLarge, "request body of %d bytes: more than the %d bytes allowed", r.ContentLength, l.MaxBody))
			return
		}
		b := &limitedBody{orig: r.Body, r: r.Body, rc: http.NewResponseController(w), timeout: l.BodyTimeout}
		if l.MaxBody > 0 {
			b.r = http.MaxBytesReader(w, r.Body, l.MaxBody)
		}
		if l.BodyTimeout > 0 {
			_ = b.rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) // not every ResponseWriter has deadlines
		}
		r.Body = b
		next.ServeHTTP(w, r)
	})
}

// StreamBody lifts the body deadline and size cap of Limit for r, whose
// handler reads the body as a stream for as long as the exchange lasts
// and bounds it itself. It does nothing for a request not served through
// Limit. Call it before reading the body.
func StreamBody(r *http.Request) {
	if b, ok := r.Body.(*limitedBody); ok {
		b.r = b.orig
		b.lift()
	}
}

// limitedBody is a request body under Limit.
type limitedBody struct {
	orig    io.ReadCloser
	r       io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			err = fmt.Errorf("%w (within %s)", ErrBodyTimeout, b.timeout)
		}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.r.Close() }

func (b *limitedBody) lift() { _ = b.rc.SetReadDeadline(time.Time{}) }

// ConnLimits configures LimitListener.
type ConnLimits struct {
	// MaxPerClient caps the open connections of one client IP address;
	// a connection over it is closed as soon as it is accepted. Zero:
	// DefaultMaxConnsPerClient; negative: no cap.
	MaxPerClient int
	// Loopback applies the cap to loopback clients too. Off by default:
	// every local process (the CLI, agents, a browser, the tests) shares
	// 127.0.0.1, so a cap would be one budget for all of them, and a
	// local process is bounded by the machine's own limits anyway.
	Loopback bool
	// Linger bounds how long a connection that the server half-closed
	// while the client was still sending (an answer 431 or 413) keeps
	// reading and discarding what arrives, so that the client reads the
	// answer instead of a connection reset. Zero: 2 s.
	Linger time.Duration
}

// maxLingerBytes bounds what a lingering connection discards.
const maxLingerBytes = 64 << 20

// Listener is a net.Listener under ConnLimits.
type Listener struct {
	net.Listener
	cfg     ConnLimits
	mu      sync.Mutex
	perIP   map[string]int
	open    int
	refused atomic.Int64
}

// LimitListener wraps ln with the cap of cfg on connections per client
// address and the lingering close described at ConnLimits.Linger.
func LimitListener(ln net.Listener, cfg ConnLimits) *Listener {
	if cfg.MaxPerClient == 0 {
		cfg.MaxPerClient = DefaultMaxConnsPerClient
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 2 * time.Second
	}
	return &Listener{Listener: ln, cfg: cfg, perIP: map[string]int{}}
}

// Accept returns the next connection within the cap; it closes those
// over it itself.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		capped := l.cfg.MaxPerClient > 0 && (l.cfg.Loopback || !ip.IsLoopback())
		key := ip.String()
		l.mu.Lock()
		if capped && l.perIP[key] >= l.cfg.MaxPerClient {
			l.mu.Unlock()
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		l.perIP[key]++
		l.open++
		l.mu.Unlock()
		return &limitedConn{Conn: c, l: l, key: key}, nil
	}
}

// Open is the number of accepted connections not yet closed, upgraded
// ones included.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused is the number of connections closed for being over the cap.
func (l *Listener) Refused() int64 { return l.refused.Load() }

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perIP[key]--; l.perIP[key] <= 0 {
		delete(l.perIP, key)
	}
}

func clientIP(a net.Addr) net.IP {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}

// limitedConn is a connection of a Listener.
type limitedConn struct {
	net.Conn
	l          *Listener
	key        string
	halfClosed atomic.Bool
	closed     sync.Once
}

// CloseWrite is what http.Server calls before it closes a connection
// whose client may still be sending (after 431, or 413 on a body left
// unread).
func (c *limitedConn) CloseWrite() error {
	c.halfClosed.Store(true)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection, first discarding for up to Linger what
// the client still sends to a half-closed one: closed with unread data,
// TCP resets the connection, and the client loses the answer.
func (c *limitedConn) Close() error {
	err := net.ErrClosed
	c.closed.Do(func() {
		if c.halfClosed.Load() {
			_ = c.SetReadDeadline(time.Now().Add(c.l.cfg.Linger))
			_, _ = io.CopyN(io.Discard, c.Conn, maxLingerBytes)
		}
		err = c.Conn.Close()
		c.l.release(c.key)
	})
	return err
}

// ReadBody reads r's body, of at most limit bytes, as every route that
// takes a body does. The problem it returns is 413 for a longer body,
// 408 for one that did not arrive within Limits.BodyTimeout, 400 for any
// other read error. A JSON body (by its Content-Type, IsJSONType) must
// be UTF-8 text that decodes as sent: another charset is 415
// (CheckJSONCharset), invalid UTF-8 or a lone surrogate escape 400
// (CheckJSONText).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *lmosproto.Problem) {
	if p := CheckJSONCharset(r); p != nil {
		return nil, p
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		if p := checkJSONBody(r, b); p != nil {
			return nil, p
		}
		return b, nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, Problemf(http.StatusRequestEntityTooLarge, "request body: more than the %d bytes allowed", limit)
	}
	if errors.Is(err, ErrBodyTimeout) {
		return nil, Problemf(http.StatusRequestTimeout, "request body: %v", err)
	}
	return nil, Problemf(http.StatusBadRequest, "request body: %v", err)
}

// PageQuery reads the offset and limit of a paged listing from q: offset
// 0 or more (default 0), limit 1 to max (default def), each given at most
// once as a decimal integer; anything else is a 400 problem naming the
// parameter.
func PageQuery(q url.Values, def, max int) (offset, limit int, p *lmosproto.Problem) {
	limit = def
	for _, f := range []struct {
		name     string
		v        *int
		min, max int
	}{{"offset", &offset, 0, int(^uint(0) >> 1)}, {"limit", &limit, 1, max}} {
		vs, ok := q[f.name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(vs[0])
		if len(vs) > 1 || err != nil || n < f.min || n > f.max {
			return 0, 0, Problemf(http.StatusBadRequest, "query parameter %s: %q: want one integer in %d..%d", f.name, vs[0], f.min, f.max)
		}
		*f.v = n
	}
	return offset, limit, nil
}

// SameOriginRedirects is a CheckRedirect for an http.Client that fetches
// what a remote party names: it follows at most max redirects, each to
// the scheme and host (port included) of the request's first URL, so a
// document cannot send the node to another host.
func SameOriginRedirects(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if len(via) > max {
			return fmt.Errorf("more than %d redirects", max)
		}
		if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return fmt.Errorf("refused a redirect from %s to another host: %s", first.Redacted(), req.URL.Redacted())
		}
		return nil
	}
}
