package interact

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lmosnode/lmosnode/proto"
)

// The problems the engine and the transports answer with. Every one is an
// LMOS error message with the RFC 7807 members; status is the HTTP status
// code a gateway answers with, title names the kind of failure (stable,
// meant for programs) and detail the case (meant for people).
const (
	TitleBadRequest          = "Bad request"           // 400: the message breaks the LMOS envelope rules
	TitleInvalidInput        = "Invalid input"         // 400: input or data does not match the TD's data schema
	TitleThingNotFound       = "Thing not found"       // 404: no Thing with this thingID here
	TitleAffordanceNotFound  = "Affordance not found"  // 404: the TD has no such property, action or event
	TitleActionNotFound      = "Action not found"      // 404: no invocation with this correlationID (query, cancel, stream)
	TitleOperationNotAllowed = "Operation not allowed" // 405: e.g. writeProperty on a readOnly property
	TitleConflict            = "Conflict"              // 409: an invocation with this correlationID is running
	TitleTooManyRequests     = "Too many requests"     // 429: the calling node has too many interactions in flight here
	TitleCancelled           = "Cancelled"             // 499: the consumer or the node gave up
	TitleInternal            = "Internal error"        // 500: the backend failed (or panicked)
	TitleNotImplemented      = "Not implemented"       // 501: the backend does not serve this operation
	TitleBadGateway          = "Bad gateway"           // 502: the backend or the owner node is unreachable or misbehaved
	TitleUnavailable         = "Service unavailable"   // 503: no backend registered, node closing, slow consumer dropped
	TitleTimeout             = "Timeout"               // 504: the backend did not answer in time
)

// StatusClientClosed is the status of an interaction that the consumer or
// the node abandoned before it ended (nginx's 499; HTTP has no code for it).
const StatusClientClosed = 499

// problem returns a *proto.Problem error.
func problem(status int, title, format string, args ...any) *proto.Problem {
	return &proto.Problem{Type: proto.ProblemTypeBlank, Status: status, Title: title, Detail: fmt.Sprintf(format, args...)}
}

// errorMessage is the error message answering req for err, with the
// problem err carries, or one derived from the kind of err.
func errorMessage(req *proto.Message, err error) *proto.Message {
	return proto.ErrorFor(req, asProblem(err))
}

// asProblem maps an error to a problem: a *proto.Problem it wraps as is,
// context errors to 504 and 499, anything else to 500.
func asProblem(err error) error {
	var p *proto.Problem
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, context.DeadlineExceeded):
		return problem(http.StatusGatewayTimeout, TitleTimeout, "%v", err)
	case errors.Is(err, context.Canceled):
		return problem(StatusClientClosed, TitleCancelled, "%v", err)
	}
	return problem(http.StatusInternalServerError, TitleInternal, "%v", err)
}

// newErrorMessage is proto.NewError, for when req may lack the members
// Reply copies (a request that could not be decoded).
func newErrorMessage(req *proto.Message, status int, title, format string, args ...any) *proto.Message {
	return proto.ErrorFor(req, problem(status, title, format, args...))
}
