package gateway

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/fxamacker/cbor/v2"
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

// negotiate picks the format of r's answer from its Accept header: the
// acceptable one with the higher quality, JSON on a tie or without Accept.
// cborOK is false on routes that answer with JSON only. ok is false when
// the header admits neither (406).
func negotiate(r *http.Request, cborOK bool) (f format, ok bool) {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return formatJSON, true
	}
	qJSON, qCBOR := -1.0, -1.0
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			wild := mt == "*/*" || mt == "application/*"
			if (wild || isJSONType(mt)) && q > qJSON {
				qJSON = q
			}
			if (wild || isCBORType(mt)) && q > qCBOR {
				qCBOR = q
			}
		}
	}
	if !cborOK {
		qCBOR = -1
	}
	switch {
	case qCBOR > 0 && qCBOR > qJSON:
		return formatCBOR, true
	case qJSON > 0:
		return formatJSON, true
	}
	return formatJSON, false
}

// responseFormat is the format of r's answer; ServeHTTP has already
// refused an Accept that admits none (DELETE falls back to JSON).
func responseFormat(r *http.Request) format {
	f, _ := negotiate(r, true)
	return f
}

// requestFormat is the format of r's body from its Content-Type: JSON
// without one.
func requestFormat(r *http.Request) (format, *problem) {
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
	return formatJSON, newProblem(http.StatusUnsupportedMediaType, "Content-Type %q: the body must be application/json or application/cbor", ct)
}

// writeValue answers with v (null when absent) in format f.
func writeValue(w http.ResponseWriter, r *http.Request, status int, f format, v lmosproto.Value) {
	if f != formatCBOR {
		writeJSON(w, status, valueJSON(v))
		return
	}
	b, err := v.MarshalCBOR()
	if err != nil { // impossible: a Value always has a CBOR form
		writeProblem(w, r, newProblem(http.StatusInternalServerError, "encoding the value as CBOR: %v", err))
		return
	}
	writeBody(w, status, lmosproto.ContentTypeCBOR, b)
}
