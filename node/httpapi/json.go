package httpapi

import (
	"encoding/json"
	"net/http"

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
