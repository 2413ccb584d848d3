package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// HandleMethods routes each method of path to its handler on mux, and
// any other method on path to a 405 problem naming the allowed ones in
// its Allow header (HEAD with GET: a GET pattern serves HEAD too).
func HandleMethods(mux *http.ServeMux, path string, methods map[string]http.HandlerFunc) {
	allowed := make([]string, 0, len(methods)+1)
	for method, fn := range methods {
		mux.HandleFunc(method+" "+path, fn)
		allowed = append(allowed, method)
		if method == http.MethodGet {
			allowed = append(allowed, http.MethodHead)
		}
	}
	slices.Sort(allowed)
	allow := strings.Join(allowed, ", ")
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusMethodNotAllowed,
			Detail: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, allow)})
	})
}
