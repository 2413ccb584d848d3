package proto

import (
	"errors"
	"strconv"
	"strings"
)

// An LMOS error message carries the RFC 7807 (RFC 9457) problem members
// type, title, status, detail and instance next to the envelope members;
// the spec makes all five mandatory and status a string. Problem is the
// same data as a Go error and as the body of every HTTP problem response
// of the node (its directory API, WoT HTTP binding, groups API and
// WebSocket endpoints), which add the members validationErrors and
// candidates.

// ProblemTypeBlank is the RFC 7807 problem type of a problem that has no
// more specific type than its status code.
const ProblemTypeBlank = "about:blank"

// ContentTypeProblemJSON is the media type of an RFC 7807 problem body.
const ContentTypeProblemJSON = "application/problem+json"

// Problem is an RFC 9457 (RFC 7807) problem. It is an error, so a Thing's
// handler can return one and the node answers with the error message it
// describes (see ErrorFor), an HTTP handler can return one and the node
// answers with the problem response, and an API client returns the one it
// received. Marshalled with encoding/json it is an RFC 9457 body (status a
// number; title and status always present). The extension members
// ValidationErrors and Candidates are HTTP's: an LMOS error message does
// not carry them (its extension members travel in Message.Extensions).
type Problem struct {
	// Type is a URI naming the kind of problem; empty or ProblemTypeBlank
	// means the status says it all.
	Type string `json:"type,omitempty"`
	// Title is a short summary of the kind of problem, the status text
	// unless a more specific one applies.
	Title string `json:"title"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Detail explains this occurrence, naming the field, Thing or peer at
	// fault.
	Detail string `json:"detail,omitempty"`
	// Instance names this occurrence: the request path of an HTTP problem,
	// "urn:uuid:" + the messageID of an LMOS error message.
	Instance string `json:"instance,omitempty"`
	// ValidationErrors lists the problems of an invalid TD or request
	// body (WoT Discovery §7.3.2.1).
	ValidationErrors []FieldError `json:"validationErrors,omitempty"`
	// Candidates lists, on 300 Multiple Choices, the publishers of an
	// ambiguous Thing id.
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

// Candidate is one publisher of an ambiguous Thing id.
type Candidate struct {
	// Publisher is the publisher's peer ID.
	Publisher string `json:"publisher"`
	// Title is the Thing's title.
	Title string `json:"title,omitempty"`
	// Href retrieves this publisher's Thing.
	Href string `json:"href"`
	// Modified is when the Thing last changed here (RFC 3339).
	Modified string `json:"modified,omitempty"`
	// Trust is the publisher's mark in the node's trust list: own,
	// trusted, denied or unknown.
	Trust string `json:"trust,omitempty"`
}

// Error returns "status title: detail" (without status when it is 0,
// without a detail that repeats the title), then one line per validation
// error: "  field: description".
func (p *Problem) Error() string {
	s := p.Title
	if p.Status != 0 {
		s = strings.TrimSuffix(strconv.Itoa(p.Status)+" "+p.Title, " ")
	}
	if p.Detail != "" && p.Detail != p.Title {
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

// Problem returns the problem an error message carries, nil when m is not
// an error message. Status is 0 when m's status is not a number.
func (m *Message) Problem() *Problem {
	if m.Type != MsgError {
		return nil
	}
	status, _ := strconv.Atoi(m.Status)
	return &Problem{Type: m.ProblemType, Title: m.Title, Status: status, Detail: m.Detail, Instance: m.Instance}
}

// NewError returns the error message answering req (see Reply) with an
// HTTP status code, a title and a detail. It fills every member the spec
// makes mandatory: type is ProblemTypeBlank, an empty detail repeats the
// title, and instance is "urn:uuid:" + the error message's own messageID.
// When req is nil (a request that could not be decoded), thingID and
// correlationID are left for the caller to fill.
func NewError(req *Message, status int, title, detail string) *Message {
	return newProblem(req, &Problem{Status: status, Title: title, Detail: detail})
}

// ErrorFor returns the error message answering req for err: the *Problem
// err wraps, if any, otherwise status 500 with err's text as detail.
func ErrorFor(req *Message, err error) *Message {
	var p *Problem
	if !errors.As(err, &p) {
		p = &Problem{Status: 500, Title: "Internal Server Error", Detail: err.Error()}
	}
	return newProblem(req, p)
}

func newProblem(req *Message, p *Problem) *Message {
	var m *Message
	if req != nil {
		m = req.Reply(MsgError)
	} else {
		m = NewMessage("", MsgError)
	}
	m.ProblemType = p.Type
	if m.ProblemType == "" {
		m.ProblemType = ProblemTypeBlank
	}
	m.Title, m.Detail, m.Instance = p.Title, p.Detail, p.Instance
	if m.Detail == "" {
		m.Detail = m.Title
	}
	if m.Instance == "" {
		m.Instance = "urn:uuid:" + m.MessageID
	}
	m.Status = strconv.Itoa(p.Status)
	return m
}
