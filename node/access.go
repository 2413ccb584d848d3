package node

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// Access to the API. Bound to loopback without Config.APIToken, the API
// answers every local client and refuses non-loopback Host headers (see
// loopbackHostOnly). With a token, every request — HTTP, SSE and the
// WebSocket upgrades of /ws and /ws/agent — must carry
// "Authorization: Bearer <token>"; any other request gets 401 with a
// WWW-Authenticate challenge and an empty body, so that nothing about the
// node leaks to a client without the token.

// bearerRealm is the realm of the WWW-Authenticate challenge.
const bearerRealm = "lmosnode"

// requireBearer answers 401 to every request that lacks the bearer token
// and passes the others to next. The comparison takes constant time.
func requireBearer(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+bearerRealm+`"`)
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

// LoadAPIToken returns the token a client of home's node sends:
// $LMOS_API_TOKEN when set, else the apiToken of home/config.json, else ""
// (also when home has no config file).
func LoadAPIToken(home string) (string, error) {
	if tok, ok := os.LookupEnv(APITokenEnv); ok {
		return tok, nil
	}
	cfg, err := LoadConfig(home)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	return cfg.APIToken, nil
}

// NewAPIClient returns an HTTP client for the node's API that sends token
// as "Authorization: Bearer <token>" on every request; an empty token
// returns http.DefaultClient. The client uses http.DefaultTransport.
func NewAPIClient(token string) *http.Client {
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
