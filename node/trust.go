package node

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/lmosnode/lmosnode/node/trust"
	"github.com/lmosnode/lmosnode/node/trust/trustapi"
)

// The operator's trust list (docs/api.md#trust): Config.Trust at start,
// changed live through /api/v1/trust (package trustapi; lmosnode trust
// add|rm|ls), each change written back to the "trust" member of
// config.json. A publisher put on the deny list loses the records it had
// here at once.

// FetchTrust asks the API at apiURL for its trust list.
func FetchTrust(ctx context.Context, client *http.Client, apiURL string) (trustapi.List, error) {
	var l trustapi.List
	err := callJSON(ctx, client, http.MethodGet, strings.TrimSuffix(apiURL, "/")+"/api/v1/trust", nil, &l)
	return l, err
}

// SetTrust puts publisher (a peer ID, did:key or short form) at level in
// the trust list of the API at apiURL and returns the list.
func SetTrust(ctx context.Context, client *http.Client, apiURL, publisher string, level trust.Level) (trustapi.List, error) {
	var l trustapi.List
	err := callJSON(ctx, client, http.MethodPut, trustURL(apiURL, publisher), trustapi.Request{Level: string(level)}, &l)
	return l, err
}

// RemoveTrust takes publisher off the trust list of the API at apiURL and
// returns the list.
func RemoveTrust(ctx context.Context, client *http.Client, apiURL, publisher string) (trustapi.List, error) {
	var l trustapi.List
	err := callJSON(ctx, client, http.MethodDelete, trustURL(apiURL, publisher), nil, &l)
	return l, err
}

func trustURL(apiURL, publisher string) string {
	return strings.TrimSuffix(apiURL, "/") + "/api/v1/trust/" + url.PathEscape(publisher)
}
