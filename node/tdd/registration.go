package tdd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// memberRegistration is the registration information member of a WoT
// Discovery Enriched TD.
const memberRegistration = "registration"

// takeRegistration removes the registration information a client sent in
// a TD it writes (W3C WoT Discovery §6.2: an Enriched TD, e.g. one read
// from a directory and written back): it is the directory's, not part of
// the signed record. created, modified and retrieved are the directory's
// to assign and are ignored; expires and ttl ask for an expiring
// registration, which this node does not offer for its own Things (they
// live until deleted), so they are refused with 501 rather than silently
// dropped. Times must be RFC 3339 date-times with an offset, ttl a
// non-negative number (400 otherwise). Problems name their fields with
// prefix before the pointer.
func takeRegistration(td *lmosproto.TD, prefix string) *lmosproto.Problem {
	raw, ok := td.Extra[memberRegistration]
	if !ok {
		return nil
	}
	ptr := prefix + "/" + memberRegistration
	var reg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &reg); err != nil || reg == nil {
		return &lmosproto.Problem{Status: http.StatusBadRequest,
			Detail:           fmt.Sprintf("%s: registration information must be an object", ptr),
			ValidationErrors: []lmosproto.FieldError{{Field: ptr, Description: "want an object with created, modified, expires, ttl or retrieved"}}}
	}
	var bad []lmosproto.FieldError
	for _, name := range []string{"created", "modified", "expires", "retrieved"} {
		v, ok := reg[name]
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			bad = append(bad, lmosproto.FieldError{Field: ptr + "/" + name, Description: "want an RFC 3339 date-time string"})
		} else if _, err := time.Parse(time.RFC3339, s); err != nil {
			bad = append(bad, lmosproto.FieldError{Field: ptr + "/" + name, Description: fmt.Sprintf("%q is not an RFC 3339 date-time with a time zone offset", s)})
		}
	}
	if v, ok := reg["ttl"]; ok {
		var ttl float64
		if err := json.Unmarshal(v, &ttl); err != nil || ttl < 0 {
			bad = append(bad, lmosproto.FieldError{Field: ptr + "/ttl", Description: "want a non-negative number of seconds"})
		}
	}
	if len(bad) > 0 {
		return &lmosproto.Problem{Status: http.StatusBadRequest,
			Detail: fmt.Sprintf("%s: invalid registration information", ptr), ValidationErrors: bad}
	}
	for _, name := range []string{"expires", "ttl"} {
		if _, ok := reg[name]; ok {
			return &lmosproto.Problem{Status: http.StatusNotImplemented,
				Detail:           fmt.Sprintf("%s/%s: this directory does not expire the Things it publishes (they live until deleted); leave out expires and ttl", ptr, name),
				ValidationErrors: []lmosproto.FieldError{{Field: ptr + "/" + name, Description: "expiring registrations are not supported"}}}
		}
	}
	delete(td.Extra, memberRegistration)
	return nil
}
