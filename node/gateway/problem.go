package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// contentTypeProblem is the media type of RFC 7807 bodies.
const contentTypeProblem = "application/problem+json"

// problem is an RFC 7807 problem details body.
type problem struct {
	Type     string `json:"type,omitempty"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Candidates lists the publishers of an ambiguous id (300).
	Candidates []candidate `json:"candidates,omitempty"`
}

// candidate is one publisher of an ambiguous thing id.
type candidate struct {
	Publisher string `json:"publisher"`
	Title     string `json:"title,omitempty"`
	Href      string `json:"href"`
}

func newProblem(status int, format string, args ...any) *problem {
	return &problem{Status: status, Title: http.StatusText(status), Detail: fmt.Sprintf(format, args...)}
}

// problemOf turns an LMOS error message into a problem, keeping its
// status, title and detail.
func problemOf(m *lmosproto.Message) *problem {
	p := &problem{Type: m.ProblemType, Title: m.Title, Detail: m.Detail, Instance: m.Instance}
	p.Status, _ = strconv.Atoi(m.Status)
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

func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	w.Header().Set("Content-Type", contentTypeProblem)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p) // the client went away; nothing to do
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
