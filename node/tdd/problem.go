package tdd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ContentTypeProblem is the media type of an RFC 9457 problem body.
const ContentTypeProblem = "application/problem+json"

// Problem is an RFC 9457 (RFC 7807) problem details object, the body of
// every error response, with the extension members the WoT Discovery spec
// and this API use. It implements error, so Client returns it.
type Problem struct {
	// Type is a URI naming the kind of problem; empty means "about:blank".
	Type string `json:"type,omitempty"`
	// Title is the status text.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence, naming the field or Thing at fault.
	Detail string `json:"detail,omitempty"`
	// Instance is the request path.
	Instance string `json:"instance,omitempty"`
	// ValidationErrors lists the problems of an invalid TD or request
	// body (WoT Discovery §7.3.2.1).
	ValidationErrors []FieldError `json:"validationErrors,omitempty"`
	// Candidates lists, on 300 Multiple Choices, the publishers of an id.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// FieldError is one entry of Problem.ValidationErrors.
type FieldError struct {
	// Field is the JSON pointer (RFC 6901) of the member at fault in the
	// request body ("" is the whole body).
	Field string `json:"field"`
	// Description says what is wrong.
	Description string `json:"description"`
}

// Candidate is one publisher of an ambiguous thing id.
type Candidate struct {
	// Publisher is the publisher's peer ID.
	Publisher string `json:"publisher"`
	// Title is the Thing's title.
	Title string `json:"title,omitempty"`
	// Href retrieves this publisher's Thing.
	Href string `json:"href"`
	// Modified is when the Thing last changed here (RFC 3339).
	Modified string `json:"modified,omitempty"`
}

// Error returns "status title: detail", then one line per validation error.
func (p *Problem) Error() string {
	s := fmt.Sprintf("%d %s", p.Status, p.Title)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	for _, fe := range p.ValidationErrors {
		field := fe.Field
		if field == "" {
			field = "(root)"
		}
		s += "\n  " + field + ": " + fe.Description
	}
	return s
}

// writeProblem answers r with p, filling title and instance.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	body, err := json.Marshal(p)
	if err != nil { // impossible: strings and ints only
		body = []byte(`{"title":"Internal Server Error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", ContentTypeProblem)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}

// badRequest is a 400 problem.
func badRequest(format string, args ...any) *Problem {
	return &Problem{Status: http.StatusBadRequest, Detail: fmt.Sprintf(format, args...)}
}

// invalidTD is the 400 problem of a TD that proto.ValidateTD refused; the
// pointers are prefixed with prefix (the TD's place in the request body).
func invalidTD(what, prefix string, err error) *Problem {
	p := &Problem{Status: http.StatusBadRequest}
	var verrs lmosproto.ValidationErrors
	var verr lmosproto.ValidationError
	switch {
	case errors.As(err, &verrs):
		for _, e := range verrs {
			p.ValidationErrors = append(p.ValidationErrors, FieldError{Field: prefix + e.Pointer, Description: e.Message})
		}
	case errors.As(err, &verr):
		p.ValidationErrors = []FieldError{{Field: prefix + verr.Pointer, Description: verr.Message}}
	default:
		p.ValidationErrors = []FieldError{{Field: prefix, Description: err.Error()}}
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
