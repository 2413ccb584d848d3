package proto

import (
	"errors"
	"fmt"
	"strconv"
)

// An LMOS error message carries the RFC 7807 (RFC 9457) problem members
// type, title, status, detail and instance next to the envelope members;
// the spec makes all five mandatory and status a string. Problem is the
// same data as a Go error and as the body of an HTTP problem response.

// ProblemTypeBlank is the RFC 7807 problem type of a problem that has no
// more specific type than its status code.
const ProblemTypeBlank = "about:blank"

// ContentTypeProblemJSON is the media type of an RFC 7807 problem body.
const ContentTypeProblemJSON = "application/problem+json"

// Problem is an RFC 7807 problem. It is an error, so a Thing's handler can
// return one and the node answers with the error message it describes (see
// ErrorFor); marshalled with encoding/json it is an RFC 7807 body (status
// a number). Extension members travel in Message.Extensions.
type Problem struct {
	Type     string `json:"type,omitempty"`
	Title    string `json:"title,omitempty"`
	Status   int    `json:"status,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
}

func (p *Problem) Error() string {
	s := p.Title
	if p.Status != 0 {
		s = fmt.Sprintf("%s (%d)", s, p.Status)
	}
	if p.Detail != "" && p.Detail != p.Title {
		s += ": " + p.Detail
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
