package groupapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/lmosnode/lmosnode/node/tdd"
)

// How the Handler writes its answers: JSON, problem details, and an event
// stream; and how the Client reads a problem. (The node's API answers
// problems alike on every route.)

const contentTypeJSON = "application/json"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}

// writeProblem answers r with an RFC 9457 problem.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	p := tdd.Problem{Title: http.StatusText(status), Status: status, Detail: detail, Instance: r.URL.Path}
	w.Header().Set("Content-Type", tdd.ContentTypeProblem)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(p) // the client went away; nothing to do
}

// startEvents answers 200 text/event-stream and returns the function that
// sends the stream's next lines (an event, a comment): false when the
// client is gone.
func startEvents(w http.ResponseWriter) func(lines string) bool {
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", tdd.ContentTypeEventStream)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return func(lines string) bool {
		// A client that stops reading must not hold the stream forever.
		_ = rc.SetWriteDeadline(time.Now().Add(2 * heartbeat))
		if _, err := w.Write([]byte(lines)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
}

// problemOf is the error of an answer with status that is not a success:
// the problem its body carries, else one made of the status and the body.
func problemOf(status int, body []byte) *tdd.Problem {
	var p tdd.Problem
	if json.Unmarshal(body, &p) != nil || (p.Title == "" && p.Detail == "") {
		p = tdd.Problem{Title: http.StatusText(status), Detail: strings.TrimSpace(string(body))}
	}
	if p.Status == 0 {
		p.Status = status
	}
	return &p
}
