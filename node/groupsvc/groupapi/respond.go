package groupapi

import (
	"net/http"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// writeProblem answers r with an RFC 9457 problem (package httpapi, as on
// every route of the node's API).
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	httpapi.WriteProblem(w, r, httpapi.Problemf(status, "%s", detail))
}
