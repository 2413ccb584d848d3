package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// Problemf returns a problem with status, its status text as title and a
// formatted detail.
func Problemf(status int, format string, args ...any) *lmosproto.Problem {
	return &lmosproto.Problem{Status: status, Title: http.StatusText(status), Detail: fmt.Sprintf(format, args...)}
}

// ProblemLanguage is the language of the titles and details of the
// node's problems, sent as Content-Language with every problem response.
// There are no translations: a request's Accept-Language is not
// negotiated (WoT Discovery makes that optional).
const ProblemLanguage = "en"

// WriteProblem answers r with the problem err is or wraps; any other
// error is a 500 problem with err's text as detail. The problem is not
// changed: the response fills an empty title with the status text and an
// empty instance with r's path, and leaves out the type "about:blank". A
// status that is no HTTP status code answers 500. The body is UTF-8 JSON
// (encoding/json replaces invalid UTF-8 in the strings), in English
// (Content-Language: ProblemLanguage).
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := responseOf(r, err)
	body, merr := json.Marshal(&p)
	if merr != nil { // impossible: strings and ints only
		p.Status = http.StatusInternalServerError
		body = []byte(`{"title":"Internal Server Error","status":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", lmosproto.ContentTypeProblemJSON)
	h.Set("Content-Language", ProblemLanguage)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length") // a handler may have set one for the body it meant to send
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}

// ProblemEvent is the server-sent event of type typ whose data is the
// problem err describes, filled in as WriteProblem fills it: how a stream
// that has begun reports a failure.
func ProblemEvent(r *http.Request, typ string, err error) Event {
	p := responseOf(r, err)
	body, _ := json.Marshal(&p) // strings and ints only
	return Event{Type: typ, Data: string(body)}
}

// responseOf is the problem err describes as a response to r shows it.
func responseOf(r *http.Request, err error) lmosproto.Problem {
	var p lmosproto.Problem
	if pp := (*lmosproto.Problem)(nil); errors.As(err, &pp) && pp != nil {
		p = *pp
	} else {
		p = lmosproto.Problem{Status: http.StatusInternalServerError, Detail: err.Error()}
	}
	if p.Status < 100 || p.Status > 999 {
		p.Status = http.StatusInternalServerError
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	if p.Type == lmosproto.ProblemTypeBlank {
		p.Type = ""
	}
	return p
}

// ResponseProblem is the problem a response with an error status
// describes: its application/problem+json body, else the status with its
// status text and, as detail, the first line of a plain body (what a
// proxy or a mux answers). An undecodable problem body is an error.
func ResponseProblem(resp *http.Response, body []byte) (*lmosproto.Problem, error) {
	p := &lmosproto.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != lmosproto.ContentTypeProblemJSON {
		if mt == "text/plain" {
			line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
			p.Detail = line
		}
		return p, nil
	}
	if err := json.Unmarshal(body, p); err != nil {
		return nil, fmt.Errorf("%s, undecodable problem body: %w", resp.Status, err)
	}
	return p, nil
}

// AsProblems serves h, a handler of a library that answers errors with
// http.Error (plain text: http.FileServer, coder/websocket's handshake,
// net/http/pprof), so that every answer of status 400 or more is a
// problem instead: the same status and headers, the first line of the
// text as detail. Other answers, a hijacked connection (a WebSocket)
// included, pass unchanged.
func AsProblems(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &problemWriter{ResponseWriter: w}
		h.ServeHTTP(pw, r)
		if pw.status != 0 {
			line, _, _ := strings.Cut(strings.TrimSpace(pw.text.String()), "\n")
			WriteProblem(w, r, &lmosproto.Problem{Status: pw.status, Detail: line})
		}
	})
}

// problemWriter holds back an error answer (status and text) for
// AsProblems and passes every other answer on.
type problemWriter struct {
	http.ResponseWriter
	status  int // the error status held back
	text    strings.Builder
	written bool // an answer went through
}

func (p *problemWriter) WriteHeader(code int) {
	if code >= http.StatusBadRequest && !p.written && p.status == 0 {
		p.status = code
		return
	}
	if p.status == 0 {
		p.written = code >= http.StatusOK // 1xx are informational
		p.ResponseWriter.WriteHeader(code)
	}
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if p.status != 0 {
		if p.text.Len() < 1<<10 {
			p.text.Write(b)
		}
		return len(b), nil
	}
	p.written = true
	return p.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController and coder/websocket reach w's
// Flusher and Hijacker.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
