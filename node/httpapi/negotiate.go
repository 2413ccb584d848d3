package httpapi

import (
	"net/http"
	"strings"

	"github.com/munnerz/goautoneg"
)

// Negotiate returns the media type of offers (such as "application/json")
// that r's Accept header prefers: each offer gets the highest quality of
// the clauses that match it — the same type, type/*, */*, or a type with
// the offer as structured syntax suffix (application/td+json matches
// application/json) — and the offer with the highest quality above 0
// wins, the earlier one on a tie. Without Accept it is the first offer. ok
// is false when Accept admits none of them (406 Not Acceptable).
func Negotiate(r *http.Request, offers ...string) (offer string, ok bool) {
	values := r.Header.Values("Accept")
	if len(values) == 0 {
		if len(offers) == 0 {
			return "", false
		}
		return offers[0], true
	}
	clauses := goautoneg.ParseAccept(strings.Join(values, ","))
	best := 0.0
	for _, o := range offers {
		typ, sub, _ := strings.Cut(o, "/")
		q := 0.0
		for _, c := range clauses {
			if c.Q > q && matches(c, typ, sub) {
				q = c.Q
			}
		}
		if q > best {
			offer, best = o, q
		}
	}
	return offer, best > 0
}

// matches reports whether the Accept clause c admits the media type
// typ/sub.
func matches(c goautoneg.Accept, typ, sub string) bool {
	switch {
	case c.Type == "*":
		return true
	case !strings.EqualFold(c.Type, typ):
		return false
	}
	if c.SubType == "*" || strings.EqualFold(c.SubType, sub) {
		return true
	}
	suffix := len(c.SubType) - len(sub) - 1
	return suffix > 0 && c.SubType[suffix] == '+' && strings.EqualFold(c.SubType[suffix+1:], sub)
}
