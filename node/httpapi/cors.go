package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Cross-origin resource sharing (the Fetch standard's CORS protocol), so
// that web pages of other origins — browser WoT tools, a web console — can
// call an API. Off unless origins are configured.

// CORSConfig lets web pages of other origins call an API. The zero value
// allows none: a browser then refuses a page of another origin the
// answers, as it does without CORS.
type CORSConfig struct {
	// AllowOrigins are the origins whose pages may call the API, each
	// "scheme://host[:port]" as a browser sends it in the Origin header
	// (lower case, no path, no trailing slash), e.g.
	// "https://console.example" or "http://localhost:3000"; or the single
	// entry "*" for every origin. Empty, the default: none.
	AllowOrigins []string `json:"allowOrigins,omitempty"`
}

// Validate reports the first origin that is not in the form above.
func (c CORSConfig) Validate() error {
	if slices.Contains(c.AllowOrigins, "*") && len(c.AllowOrigins) > 1 {
		return errors.New(`allowOrigins: "*" allows every origin and must be the only entry`)
	}
	for i, o := range c.AllowOrigins {
		if o == "*" {
			continue
		}
		if err := checkOrigin(o); err != nil {
			return fmt.Errorf("allowOrigins[%d]: %q: %w", i, o, err)
		}
	}
	return nil
}

// checkOrigin accepts an origin only in its serialised form, the one a
// browser sends, so that matching is a string comparison.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New(`must start with "http://" or "https://"`)
	}
	if u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") {
		return errors.New(`must be "scheme://host[:port]" with no user, path, query or fragment`)
	}
	if canonical := u.Scheme + "://" + strings.ToLower(u.Host); canonical != o {
		return fmt.Errorf("must be written as a browser sends it: %q", canonical)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: must be 1–65535", p)
		}
		if (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
			return fmt.Errorf("browsers omit the default port: %q", u.Scheme+"://"+u.Hostname())
		}
	}
	return nil
}

// allows reports whether c allows the pages of origin (an Origin header).
func (c CORSConfig) allows(origin string) bool {
	return slices.Contains(c.AllowOrigins, "*") || slices.Contains(c.AllowOrigins, origin)
}

// WebSocketOriginPatterns returns the origins c allows as the origin
// patterns of a WebSocket handshake (github.com/coder/websocket
// AcceptOptions.OriginPatterns: a pattern with "://" is matched with
// path.Match against the Origin's scheme://host), so that pages that may
// call the API may open its WebSocket endpoints too. Every origin matches
// only itself ('[' of an IPv6 host is escaped); "*" matches every host.
func (c CORSConfig) WebSocketOriginPatterns() []string {
	if len(c.AllowOrigins) == 0 {
		return nil
	}
	patterns := make([]string, 0, len(c.AllowOrigins))
	for _, o := range c.AllowOrigins {
		if o == "*" {
			patterns = append(patterns, "*")
			continue
		}
		patterns = append(patterns, patternEscaper.Replace(o))
	}
	return patterns
}

// patternEscaper escapes path.Match's metacharacters.
var patternEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// The CORS answer headers.
const (
	// corsMethods are the methods the API's surfaces answer.
	corsMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
	// corsHeaders are the request headers a page may send beyond the
	// CORS-safelisted ones: the bearer token, JSON and TD bodies, the SSE
	// resume point, W3C trace context.
	corsHeaders = "Authorization, Content-Type, Accept, Last-Event-ID, traceparent, tracestate"
	// corsExpose are the response headers a page may read beyond the
	// CORS-safelisted ones: where a created Thing or action is (Location),
	// the next page and the canonical TD (Link), ETag, the bearer challenge
	// of a 401, and when to retry a 429 or 503.
	corsExpose = "Location, Link, ETag, WWW-Authenticate, Retry-After"
	// corsMaxAge is how long (seconds) a browser may cache a preflight
	// answer; browsers cap it (Chromium at 2 h).
	corsMaxAge = "600"
)

// CORS answers the CORS protocol for the origins cfg allows and passes
// every request on to next, except the preflights of allowed origins,
// which it answers itself (204): a preflight (OPTIONS with Origin and
// Access-Control-Request-Method) never carries credentials such as the
// Authorization header, so a guard behind CORS (RequireBearer) does not
// see it. A request of an allowed origin gets Access-Control-Allow-Origin
// (the origin, or "*" when every origin is allowed) and the exposed
// headers; a request of any other origin, or with no Origin, passes on
// unchanged, without CORS headers, so the browser keeps the answer from
// the page. No Access-Control-Allow-Credentials: the API authenticates by
// the Authorization header, which a page sets itself, not by cookies.
//
// With no origins configured CORS returns next itself.
func CORS(cfg CORSConfig, next http.Handler) http.Handler {
	if len(cfg.AllowOrigins) == 0 {
		return next
	}
	all := slices.Contains(cfg.AllowOrigins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !cfg.allows(origin) {
			next.ServeHTTP(w, r)
			return
		}
		allow := origin
		if all {
			allow = "*"
		}
		h.Set("Access-Control-Allow-Origin", allow)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExpose)
		next.ServeHTTP(w, r)
	})
}
