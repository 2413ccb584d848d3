package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

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
