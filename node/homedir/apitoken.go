package homedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/config"
)

// LoadAPIToken returns the token a client of home's node sends:
// $LMOS_API_TOKEN when set, else the apiToken of home/config.json, else
// the content of home/api-token, else "" (also when home has neither).
func LoadAPIToken(home string) (string, error) {
	if tok, ok := os.LookupEnv(config.APITokenEnv); ok {
		return tok, nil
	}
	cfg, err := config.Load(home)
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
	if err := config.ValidateAPIToken(tok, true); err != nil || tok == "" {
		return "", fmt.Errorf("api token %s: not a token of at least %d characters", path, config.MinAPITokenLen)
	}
	return tok, nil
}

// LoadOrCreateAPIToken returns the token of home/api-token, creating the
// file (mode 0600) with 32 random bytes in hex if it is missing.
func LoadOrCreateAPIToken(home string) (tok string, created bool, err error) {
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
