package a2abridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// APIClient calls the bridge's routes on a node's API: what the
// `lmosnode a2a` commands use.
type APIClient struct {
	base string
	http *http.Client
}

// NewAPIClient returns a client of the API at apiURL that sends its
// requests with hc (for example one that adds the API token).
func NewAPIClient(apiURL string, hc *http.Client) *APIClient {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &APIClient{base: strings.TrimSuffix(apiURL, "/"), http: hc}
}

// Import asks the node to import the A2A agent whose card is at cardURL.
// A refusal is a *proto.Problem.
func (c *APIClient) Import(ctx context.Context, cardURL string) (ImportResult, error) {
	var res ImportResult
	body, _ := json.Marshal(importRequest{Card: cardURL}) // a string
	err := c.do(ctx, http.MethodPost, PathImports, body, &res)
	return res, err
}

// Agents lists the agents the node serves over A2A (GET /a2a/agents).
func (c *APIClient) Agents(ctx context.Context) ([]AgentRef, error) {
	var idx index
	err := c.do(ctx, http.MethodGet, pathAgents, nil, &idx)
	return idx.Agents, err
}

func (c *APIClient) do(ctx context.Context, method, path string, body []byte, v any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCard))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		p, err := httpapi.ResponseProblem(resp, b)
		if err != nil {
			return err
		}
		return p
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}
