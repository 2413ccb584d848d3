package httpapi

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Access to an API. Bound to loopback without a token, an API answers
// every local client and refuses non-loopback Host headers
// (LoopbackHostOnly). With a token, every request — HTTP, SSE and
// WebSocket upgrades alike — must carry "Authorization: Bearer <token>"
// (RequireBearer). CORS (cors.go) lets the pages of configured origins
// call the API from a browser; it sits inside LoopbackHostOnly and outside
// RequireBearer, because preflights carry no Authorization header.

// bearerRealm is the realm of the WWW-Authenticate challenge.
const bearerRealm = "lmosnode"

// RequireBearer answers 401 to every request that lacks the bearer token
// and passes the others to next. The answer has a WWW-Authenticate
// challenge and an empty body, so that nothing about the node leaks to a
// client without the token. The comparison takes constant time.
func RequireBearer(token string, next http.Handler) http.Handler {
	return RequireBearerOr(token, nil, next)
}

// RequireBearerOr is RequireBearer whose 401 also carries what challenge
// adds to its header (nil: nothing): the challenge of another scheme the
// request's route accepts (ANP's DIDWba, package anp).
func RequireBearerOr(token string, challenge func(http.Header, *http.Request), next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+bearerRealm+`"`)
			if challenge != nil {
				challenge(w.Header(), r)
			}
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an Authorization header value
// "Bearer <token>" (the scheme is case-insensitive).
func bearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// LoopbackHostOnly refuses (403) requests whose Host header is not a
// loopback address or localhost. It guards an API on loopback without a
// token, which a web page could still reach through DNS rebinding
// (evil.example resolving to 127.0.0.1); such requests carry the page's
// host name and are refused.
func LoopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			WriteProblem(w, r, Problemf(http.StatusForbidden, "%s", fmt.Sprintf("host %q is not a loopback address", r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether host (a Host header) is exactly a loopback
// address or localhost, with no port or a port of decimal digits:
// "127.0.0.1:5100.evil.com" is a host name, not a loopback address.
func loopbackHost(host string) bool {
	if h, port, err := net.SplitHostPort(host); err == nil {
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}

// BearerClient returns an HTTP client that sends token as
// "Authorization: Bearer <token>" on every request; an empty token
// returns http.DefaultClient. The client uses http.DefaultTransport.
func BearerClient(token string) *http.Client {
	if token == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: bearerTransport{token: token, next: http.DefaultTransport}}
}

// bearerTransport adds the Authorization header to each request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends a copy of req carrying the token (a RoundTripper must not
// modify its request).
func (t bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(req)
}
