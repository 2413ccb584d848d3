package groupapi

import (
	"fmt"
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// writeProblem answers r with an RFC 9457 problem (package httpapi, as on
// every route of the node's API).
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	httpapi.WriteProblem(w, r, httpapi.Problemf(status, "%s", detail))
}

// problemOf is the error of an answer that is not a success: the problem
// its body carries, else its status.
func problemOf(resp *http.Response, body []byte) error {
	p, err := httpapi.ResponseProblem(resp, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return p
}
