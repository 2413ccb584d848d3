package node

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/lmosnode/lmosnode/node/atomicfile"
)

// The api file tells CLI commands where the running daemon's API is, like
// kubo's: the daemon writes its base URL there once the API listens and
// removes the file on clean shutdown. A file left by a killed daemon is
// overwritten by the next one.

// writeAPIFile records apiURL in home/api.
func writeAPIFile(home, apiURL string) error {
	path := filepath.Join(home, APIFile)
	if err := atomicfile.Write(path, []byte(apiURL+"\n"), 0o600); err != nil {
		return fmt.Errorf("api file %s: %w", path, err)
	}
	return nil
}

// removeAPIFile removes home/api; a missing file is not an error.
func removeAPIFile(home string) error {
	path := filepath.Join(home, APIFile)
	if err := ignoreNotExist(os.Remove(path)); err != nil {
		return fmt.Errorf("api file %s: %w", path, err)
	}
	return nil
}

// ReadAPIFile returns the base URL of the daemon's API recorded in
// home/api, e.g. "http://127.0.0.1:5080". The error wraps fs.ErrNotExist
// when no daemon has written one, i.e. none is running. The file may be
// stale if the daemon was killed: a request to the URL then fails.
func ReadAPIFile(home string) (string, error) {
	path := filepath.Join(home, APIFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("api file %s: %w", path, err)
	}
	s := strings.TrimSpace(string(data))
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("api file %s: %q is not an http URL", path, s)
	}
	return s, nil
}
