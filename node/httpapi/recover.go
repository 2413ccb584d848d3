package httpapi

import (
	"log/slog"
	"net/http"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Recover turns a panicking handler into a 500 problem ("internal error",
// nothing of the panic) instead of a dropped connection, and logs the
// panic. http.ErrAbortHandler, the panic that aborts a response on
// purpose, passes through.
func Recover(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // net/http panics with this very value
					panic(v)
				}
				log.Error("api handler panicked", "path", r.URL.Path, "panic", v)
				WriteProblem(w, r, &lmosproto.Problem{Status: http.StatusInternalServerError, Detail: "internal error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}
