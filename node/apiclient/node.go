package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/lmosnode/lmosnode/node/api"
	"github.com/lmosnode/lmosnode/node/trust"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
)

// nodePath is the node's info.
const nodePath = "/api/v1/node"

// Node returns the node's info: its identity, addresses, version and
// reachability.
func (c *Client) Node(ctx context.Context) (api.NodeInfo, error) {
	return call[api.NodeInfo](ctx, c, request{method: http.MethodGet, path: nodePath, nameURL: true})
}

// Trust returns the node's trust list.
func (c *Client) Trust(ctx context.Context) (trustapi.List, error) {
	return call[trustapi.List](ctx, c, request{method: http.MethodGet, path: trustapi.PathList, nameURL: true})
}

// SetTrust puts publisher (a peer ID, did:key or short form) at level in
// the node's trust list and returns the list.
func (c *Client) SetTrust(ctx context.Context, publisher string, level trust.Level) (trustapi.List, error) {
	return call[trustapi.List](ctx, c, request{method: http.MethodPut, path: trustPath(publisher),
		body: trustapi.Request{Level: string(level)}, nameURL: true})
}

// RemoveTrust takes publisher off the node's trust list and returns the
// list.
func (c *Client) RemoveTrust(ctx context.Context, publisher string) (trustapi.List, error) {
	return call[trustapi.List](ctx, c, request{method: http.MethodDelete, path: trustPath(publisher), nameURL: true})
}

func trustPath(publisher string) string { return trustapi.PathList + "/" + url.PathEscape(publisher) }
