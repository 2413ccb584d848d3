package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Access to the API. Bound to loopback without Config.APIToken, the API
// answers every local client and refuses non-loopback Host headers
// (httpapi.LoopbackHostOnly). With a token, every request — HTTP, SSE and
// the WebSocket upgrades of /ws and /ws/agent — must carry
// "Authorization: Bearer <token>" (httpapi.RequireBearer); clients send it
// with httpapi.BearerClient.

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
