package tdd

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Every error response is an RFC 9457 problem, a *proto.Problem written
// by httpapi.WriteProblem; Client returns the one it receives.

// invalidTD is the 400 problem of a TD that proto.ValidateTD refused; the
// pointers are prefixed with prefix (the TD's place in the request body).
func invalidTD(what, prefix string, err error) *lmosproto.Problem {
	p := &lmosproto.Problem{Status: http.StatusBadRequest}
	var verrs lmosproto.ValidationErrors
	var verr lmosproto.ValidationError
	switch {
	case errors.As(err, &verrs):
		for _, e := range verrs {
			p.ValidationErrors = append(p.ValidationErrors, lmosproto.FieldError{Field: prefix + e.Pointer, Description: e.Message})
		}
	case errors.As(err, &verr):
		p.ValidationErrors = []lmosproto.FieldError{{Field: prefix + verr.Pointer, Description: verr.Message}}
	default:
		p.ValidationErrors = []lmosproto.FieldError{{Field: prefix, Description: err.Error()}}
	}
	fields := make([]string, 0, len(p.ValidationErrors))
	for _, fe := range p.ValidationErrors {
		f := fe.Field
		if f == "" {
			f = "(root)"
		}
		fields = append(fields, f)
	}
	p.Detail = fmt.Sprintf("%s is not a valid Thing Description: %d problem(s) at %s", what, len(p.ValidationErrors), strings.Join(uniq(fields), ", "))
	return p
}

func uniq(s []string) []string {
	out := s[:0:0]
	seen := make(map[string]bool, len(s))
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
