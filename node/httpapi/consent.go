package httpapi

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// The browser's consent (cross-site request forgery). A web page can make
// the operator's browser send a request to any address, the node's API
// included, without asking anyone first: a form submit, navigator.sendBeacon
// or fetch with mode "no-cors" — a "simple" request of the Fetch standard,
// with a body of text/plain, application/x-www-form-urlencoded or
// multipart/form-data (or none). The browser keeps the answer from the
// page, but the request has acted. BrowserConsent refuses such requests
// before they act; what a page may send after a CORS preflight is CORS's
// business (an origin the operator did not allow gets no preflight answer,
// so the browser never sends the request).

// Sec-Fetch-Site values (Fetch Metadata) that name a page of another
// origin as the request's initiator.
const (
	fetchSiteCrossSite = "cross-site"
	fetchSiteSameSite  = "same-site"
)

// BrowserConsent passes on every GET, HEAD and OPTIONS request, and every
// other request that a web page cannot have sent behind the operator's
// back; the others it refuses with a problem:
//
//   - 403 when the request comes from a page of another origin: an Origin
//     header that is neither the API's own (its scheme://host[:port] is
//     the request's Host, as coder/websocket checks a handshake) nor one
//     cors allows; or, without an Origin, Sec-Fetch-Site "cross-site" or
//     "same-site" (another port of the same host is another origin);
//   - 415 when its body is one a page sends without a CORS preflight: a
//     Content-Type of text/plain, application/x-www-form-urlencoded or
//     multipart/form-data, or none at all with a body.
//
// Requests without Origin and Sec-Fetch-Site (curl, the SDKs, the CLI)
// pass the first check; a page of the API's own origin (the console) and
// of an origin cors allows pass it too. Every client passes the second
// with a JSON, CBOR or NDJSON body.
func BrowserConsent(cors CORSConfig, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			if !sameOrigin(origin, r.Host) && !cors.allows(origin) {
				WriteProblem(w, r, Problemf(http.StatusForbidden,
					"a %s from a web page of origin %q: the node takes requests that act or call only from its own pages, pages of the origins in apiCORS.allowOrigins, and clients that send no Origin", r.Method, origin))
				return
			}
		} else if site := r.Header.Get("Sec-Fetch-Site"); site == fetchSiteCrossSite || site == fetchSiteSameSite {
			WriteProblem(w, r, Problemf(http.StatusForbidden,
				"a %s from a web page of another origin (Sec-Fetch-Site: %s) and no Origin header: the node takes requests that act or call only from its own pages, pages of the origins in apiCORS.allowOrigins, and clients that send no Origin", r.Method, site))
			return
		}
		if ct, simple := simpleBody(r); simple {
			WriteProblem(w, r, Problemf(http.StatusUnsupportedMediaType,
				"Content-Type %q: a web page can send such a body behind the operator's back; send it as application/json or application/cbor (application/x-ndjson streams an action's input)", ct))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// simpleBody reports whether r's body is one a web page may send to any
// origin without a CORS preflight, and its Content-Type: one of the
// CORS-safelisted media types, an unparsable Content-Type (a browser
// checks only the essence), or none with a body (ContentLength -1 is an
// unknown length: a chunked body).
func simpleBody(r *http.Request) (string, bool) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ct, r.ContentLength != 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct, true
	}
	switch mt {
	case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		return ct, true
	}
	return ct, false
}

// sameOrigin reports whether origin (an Origin header: scheme://host[:port])
// is the origin of the API the request was sent to, whose host and port
// are host (the Host header). The scheme is not compared: behind a
// TLS-terminating proxy the page is https, the API plain HTTP.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(withoutDefaultPort(u.Scheme, u.Host), withoutDefaultPort(u.Scheme, host))
}

// withoutDefaultPort drops scheme's default port from hostport, which a
// browser leaves out of Origin but a client may write in Host.
func withoutDefaultPort(scheme, hostport string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(hostport, ":80"):
		return strings.TrimSuffix(hostport, ":80")
	case scheme == "https" && strings.HasSuffix(hostport, ":443"):
		return strings.TrimSuffix(hostport, ":443")
	}
	return hostport
}
