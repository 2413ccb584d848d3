package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lmosnode/lmosnode/node/a2abridge"
	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/gateway"
)

// Access to the API (docs/api.md#access). The node always has a token:
// Config.APIToken (or $LMOS_API_TOKEN) when set, else the one Init wrote to
// <home>/api-token (mode 0600). Requests that act as the node (adminRequest:
// publish, delete, group administration, connect, trust changes, agent
// registration on /ws/agent) must carry "Authorization: Bearer <token>"
// (httpapi.RequireBearer) on every address. Reads and invocations need it
// too with APIAuth.RequireTokenFor "all" (the default when the API is not on
// loopback or apiToken is set); with "admin" (the default on loopback
// otherwise) they are open to local clients, and the loopback Host check
// (httpapi.LoopbackHostOnly) keeps web pages of other hosts out. Clients
// send the token with httpapi.BearerClient.

// The values of APIAuth.RequireTokenFor.
const (
	// TokenForAdmin requires the token for the requests that act as the
	// node; reads and invocations are open to local clients.
	TokenForAdmin = "admin"
	// TokenForAll requires the token for every request.
	TokenForAll = "all"
)

// APIAuth says which requests to the API must carry its token.
type APIAuth struct {
	// RequireTokenFor is TokenForAdmin or TokenForAll. Empty, the default:
	// "all" when the API is not on a loopback address or APIToken is set
	// (a configured token has always guarded every request), else "admin":
	// every local process may read the directory and call Things, only
	// those with the token (the CLI, and scripts that read it) may act as
	// the node. "admin" is refused for a non-loopback API.
	RequireTokenFor string `json:"requireTokenFor,omitempty"`
}

// tokenForAll reports whether every request must carry the token under c.
func (c Config) tokenForAll() bool {
	switch c.APIAuth.RequireTokenFor {
	case TokenForAll:
		return true
	case TokenForAdmin:
		return false
	}
	loopback, err := apiAddrIsLoopback(c.API)
	return c.APIToken != "" || err != nil || !loopback
}

func (a APIAuth) validate(loopback bool) error {
	switch a.RequireTokenFor {
	case "", TokenForAll:
		return nil
	case TokenForAdmin:
		if !loopback {
			return errors.New(`requireTokenFor: "admin" needs the api on a loopback address: other machines must send the token for every request`)
		}
		return nil
	}
	return fmt.Errorf("requireTokenFor: %q: want %q or %q", a.RequireTokenFor, TokenForAdmin, TokenForAll)
}

// adminRequest reports whether r acts as the node and so always needs the
// token: every method but GET, HEAD and OPTIONS, except the invocations
// of the WoT HTTP binding (writeProperty, invokeAction, cancelAction) and
// of MCP (/mcp) and of the A2A bridge (their calls; an import acts as the
// node), and
// the agents' WebSocket (an agent registers Things as the node's own).
// pattern is the API mux's pattern for r.
func adminRequest(r *http.Request, pattern string) bool {
	if pattern == wsAgentPath {
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !invocation(pattern)
}

// invocation reports whether pattern is a route whose writes call Things
// (the WoT HTTP binding, MCP's Streamable HTTP endpoint, the A2A bridge's
// JSON-RPC endpoints) rather than act as the node.
func invocation(pattern string) bool {
	if pattern == mcpPath || slices.Contains(gateway.Patterns(), pattern) {
		return true
	}
	return pattern != a2abridge.PathImports && slices.Contains(a2abridge.Patterns(), pattern)
}

// APIToken returns the token of the node's API: Config.APIToken when set,
// else the one in <home>/api-token.
func (n *Node) APIToken() string { return n.apiToken }

// LoadAPIToken returns the token a client of home's node sends:
// $LMOS_API_TOKEN when set, else the apiToken of home/config.json, else
// the content of home/api-token, else "" (also when home has neither).
func LoadAPIToken(home string) (string, error) {
	if tok, ok := os.LookupEnv(APITokenEnv); ok {
		return tok, nil
	}
	cfg, err := LoadConfig(home)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("api token: %w", err)
	}
	if err == nil && cfg.APIToken != "" {
		return cfg.APIToken, nil
	}
	tok, err := readAPIToken(home)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return tok, err
}

// readAPIToken reads home/api-token.
func readAPIToken(home string) (string, error) {
	path := filepath.Join(home, APITokenFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("api token %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if err := validateAPIToken(tok, true); err != nil || tok == "" {
		return "", fmt.Errorf("api token %s: not a token of at least %d characters", path, minAPITokenLen)
	}
	return tok, nil
}

// loadOrCreateAPIToken returns the token of home/api-token, creating the
// file (mode 0600) with 32 random bytes in hex if it is missing.
func loadOrCreateAPIToken(home string) (tok string, created bool, err error) {
	tok, err = readAPIToken(home)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, false, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("api token: %w", err)
	}
	tok = hex.EncodeToString(b[:])
	path := filepath.Join(home, APITokenFile)
	switch err := atomicfile.Create(path, []byte(tok+"\n"), 0o600); {
	case errors.Is(err, fs.ErrExist):
		// Another process created it first; use theirs.
		tok, err := readAPIToken(home)
		return tok, false, err
	case err != nil:
		return "", false, fmt.Errorf("api token %s: %w", path, err)
	}
	return tok, true, nil
}
