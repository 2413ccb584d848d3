package httpapi

import "net/http"

// BaseURL is the URL of the API as the client of r reaches it: scheme
// (https behind TLS) and Host, without a trailing slash. Documents that
// name this node's URLs (cards, catalogs) are rendered per BaseURL.
func BaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
