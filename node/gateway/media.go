package gateway

import (
	"mime"
	"net/http"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// format is the media type of a value body: JSON or CBOR.
type format int

const (
	formatJSON format = iota
	formatCBOR
)

// statusCBOREnc encodes status bodies deterministically (RFC 8949 core
// deterministic encoding, as the LMOS CBOR codec does).
var statusCBOREnc = func() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err) // impossible: fixed, valid options
	}
	return em
}()

func isJSONType(mt string) bool {
	return mt == lmosproto.ContentTypeJSON || strings.HasSuffix(mt, "+json")
}

func isCBORType(mt string) bool {
	return mt == lmosproto.ContentTypeCBOR || strings.HasSuffix(mt, "+cbor")
}

// negotiate picks the format of r's answer from its Accept header
// (httpapi.Negotiate): the acceptable one with the higher quality, JSON on
// a tie or without Accept. cborOK is false on routes that answer with JSON
// only. ok is false when the header admits neither (406).
func negotiate(r *http.Request, cborOK bool) (f format, ok bool) {
	offers := []string{lmosproto.ContentTypeJSON}
	if cborOK {
		offers = append(offers, lmosproto.ContentTypeCBOR)
	}
	mt, ok := httpapi.Negotiate(r, offers...)
	if mt == lmosproto.ContentTypeCBOR {
		return formatCBOR, ok
	}
	return formatJSON, ok
}

// responseFormat is the format of r's answer; ServeHTTP has already
// refused an Accept that admits none (DELETE falls back to JSON).
func responseFormat(r *http.Request) format {
	f, _ := negotiate(r, true)
	return f
}

// requestFormat is the format of r's body from its Content-Type: JSON
// without one.
func requestFormat(r *http.Request) (format, *lmosproto.Problem) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return formatJSON, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
	case isJSONType(mt):
		return formatJSON, nil
	case isCBORType(mt):
		return formatCBOR, nil
	}
	return formatJSON, httpapi.Problemf(http.StatusUnsupportedMediaType, "Content-Type %q: the body must be application/json or application/cbor", ct)
}

// writeValue answers with v (null when absent) in format f.
func writeValue(w http.ResponseWriter, r *http.Request, status int, f format, v lmosproto.Value) {
	if f != formatCBOR {
		writeJSON(w, status, valueJSON(v))
		return
	}
	b, err := v.MarshalCBOR()
	if err != nil { // impossible: a Value always has a CBOR form
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "encoding the value as CBOR: %v", err))
		return
	}
	writeBody(w, status, lmosproto.ContentTypeCBOR, b)
}
