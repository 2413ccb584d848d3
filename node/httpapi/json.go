package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// WriteJSON answers with status and v encoded as JSON (application/json),
// ended by a newline. A v that does not encode answers a 500 problem.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // a programming error: the API types encode
		status, body = http.StatusInternalServerError, []byte(`{"title":"Internal Server Error","status":500}`)
		w.Header().Set("Content-Type", lmosproto.ContentTypeProblemJSON)
	} else {
		w.Header().Set("Content-Type", lmosproto.ContentTypeJSON)
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client went away; nothing to do
}

// IsJSONType reports whether the media type mt (no parameters) is JSON
// text: application/json, a type with the +json suffix
// (application/td+json, application/merge-patch+json) or
// application/x-ndjson (lines of JSON).
func IsJSONType(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == lmosproto.ContentTypeJSON || mt == "application/x-ndjson" ||
		(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// CheckJSONCharset refuses, with a 415 problem, a request whose body is
// JSON text (IsJSONType) in a charset other than UTF-8: JSON exchanged
// between systems is UTF-8 (RFC 8259 §8.1), and the node does not
// transcode. A charset parameter of utf-8 (any case) or none passes.
func CheckJSONCharset(r *http.Request) *lmosproto.Problem {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !IsJSONType(mt) {
		return nil
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return Problemf(http.StatusUnsupportedMediaType, "Content-Type %q: JSON is taken in UTF-8 only", ct)
	}
	return nil
}

// CheckJSONText refuses, with a 400 problem, JSON text that
// encoding/json would silently rewrite to U+FFFD — invalid UTF-8 or an
// escaped lone UTF-16 surrogate ("\ud800") — so that what the node keeps,
// signs or relays is what was sent. The problem's validationErrors name
// the member (a JSON pointer) when data parses as JSON.
func CheckJSONText(data []byte) *lmosproto.Problem {
	msg := lmosproto.CheckJSONText(data)
	if msg == "" {
		return nil
	}
	ptr, what := badString(data)
	if what == "" {
		ptr, what = "", msg
	}
	return &lmosproto.Problem{Status: http.StatusBadRequest,
		Detail:           fmt.Sprintf("request body: %s at %q: the node takes text as sent or not at all", what, ptr),
		ValidationErrors: []lmosproto.FieldError{{Field: ptr, Description: what}}}
}

// jsonFrame is an object or array open around the token badString reads.
type jsonFrame struct {
	object, wantKey bool
	key             string
	index           int
}

// badString finds the first string (member name or value) of data that
// lmosproto.CheckJSONText refuses: its JSON pointer and what is wrong, or
// "" for what when there is none or data is not JSON.
func badString(data []byte) (ptr, what string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []jsonFrame
	pointer := func() string {
		var b strings.Builder
		for _, f := range stack {
			b.WriteByte('/')
			if f.object {
				b.WriteString(strings.ReplaceAll(strings.ReplaceAll(f.key, "~", "~0"), "/", "~1"))
			} else {
				b.WriteString(strconv.Itoa(f.index))
			}
		}
		return b.String()
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok {
			isKey := top != nil && top.object && top.wantKey
			if isKey {
				top.key = s
			}
			if msg := lmosproto.CheckJSONText(data[start:dec.InputOffset()]); msg != "" {
				return pointer(), msg
			}
			if isKey {
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, jsonFrame{object: tok == json.Delim('{'), wantKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the next member name, or the next element.
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
			if top.object {
				top.wantKey = true
			} else {
				top.index++
			}
		}
	}
}

// checkJSONBody is what ReadBody checks of a JSON body (IsJSONType by
// r's Content-Type) once read: CheckJSONText.
func checkJSONBody(r *http.Request, body []byte) *lmosproto.Problem {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || !IsJSONType(mt) {
		return nil
	}
	return CheckJSONText(body)
}
