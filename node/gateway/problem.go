package gateway

import (
	"net/http"
	"strconv"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// problemOf turns an LMOS error message into a problem, keeping its
// status, title and detail; a status that is no HTTP status code is 502.
func problemOf(m *lmosproto.Message) *lmosproto.Problem {
	p := m.Problem()
	if p.Status < 100 || p.Status > 999 {
		p.Status = http.StatusBadGateway
	}
	if p.Type == lmosproto.ProblemTypeBlank {
		p.Type = ""
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	return p
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	writeBody(w, status, lmosproto.ContentTypeJSON, body)
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
