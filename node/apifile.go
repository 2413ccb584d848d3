package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
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

// FetchNodeInfo asks the API at apiURL for GET /api/v1/node. An error
// response is returned as a *proto.Problem.
func FetchNodeInfo(ctx context.Context, client *http.Client, apiURL string) (api.NodeInfo, error) {
	var info api.NodeInfo
	if err := getJSON(ctx, client, strings.TrimSuffix(apiURL, "/")+"/api/v1/node", &info); err != nil {
		return api.NodeInfo{}, err
	}
	return info, nil
}

// getJSON GETs url and decodes a JSON body into v, or a problem body into a
// *proto.Problem error.
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	return callJSON(ctx, client, http.MethodGet, url, nil, v)
}

// callJSON sends method url with in (if not nil) as its JSON body and
// decodes a JSON answer into v, or a problem body into a *proto.Problem
// error.
func callJSON(ctx context.Context, client *http.Client, method, url string, in, v any) error {
	var rd io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, url, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("Accept", lmosproto.ContentTypeJSON+", "+lmosproto.ContentTypeProblemJSON)
	if in != nil {
		req.Header.Set("Content-Type", lmosproto.ContentTypeJSON)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 1<<20)
	if resp.StatusCode >= 300 {
		b, err := io.ReadAll(body)
		if err != nil {
			return fmt.Errorf("%s %s: %s, read problem body: %w", method, url, resp.Status, err)
		}
		p, err := httpapi.ResponseProblem(resp, b)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, url, err)
		}
		return fmt.Errorf("%s %s: %w", method, url, p)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != lmosproto.ContentTypeJSON {
		return fmt.Errorf("%s %s: content type %q, want %s", method, url, ct, lmosproto.ContentTypeJSON)
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%s %s: decode body: %w", method, url, err)
	}
	return nil
}
