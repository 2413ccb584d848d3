package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/felixge/httpsnoop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ObserveFunc receives one answered request: its method, the path of the
// route pattern that matched (without the pattern's method) ("" if the request was answered before routing,
// e.g. refused by an access guard), the status code (101 for an upgraded
// connection) and how long the handler ran.
type ObserveFunc func(method, route string, status int, d time.Duration)

// Observe calls obs once for every request next answers. The route comes
// from Routed, which must wrap the ServeMux inside next; without it the
// route is "". The ResponseWriter next sees keeps every interface of w
// (Flusher, Hijacker, Unwrap for http.ResponseController).
func Observe(obs ObserveFunc, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt := &route{}
		r = r.WithContext(context.WithValue(r.Context(), routeKey{}, rt))
		status := http.StatusOK
		start := time.Now()
		ww := httpsnoop.Wrap(w, httpsnoop.Hooks{
			WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
				var written bool
				return func(code int) {
					if !written && code >= 200 {
						status, written = code, true
					}
					next(code)
				}
			},
			Hijack: func(next httpsnoop.HijackFunc) httpsnoop.HijackFunc {
				status = http.StatusSwitchingProtocols
				return next
			},
		})
		next.ServeHTTP(ww, r)
		obs(r.Method, rt.pattern, status, time.Since(start))
	})
}

type routeKey struct{}

// route is where Routed leaves the pattern for Observe.
type route struct{ pattern string }

// Routed wraps a ServeMux so that Observe learns the pattern of the route
// that served a request (with muxes nested, each wrapped, the innermost
// pattern), and names the request's trace span (if any) by
// method and pattern ("GET /things/{id}"), as OpenTelemetry's HTTP
// conventions want.
func Routed(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		// ServeMux sets Pattern on the request it was given. Nested
		// muxes: the innermost one returns first, and its pattern (the
		// most precise) stays.
		if r.Pattern == "" {
			return
		}
		if rt, ok := r.Context().Value(routeKey{}).(*route); ok {
			if rt.pattern != "" {
				return
			}
			rt.pattern = routePath(r.Pattern)
		}
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			span.SetName(r.Method + " " + routePath(r.Pattern))
			span.SetAttributes(attribute.String("http.route", routePath(r.Pattern)))
		}
	})
}

// routePath is a ServeMux pattern without its method ("GET /x" → "/x").
func routePath(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '/':
			return pattern
		case ' ':
			return pattern[i+1:]
		}
	}
	return pattern
}
