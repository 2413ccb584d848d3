package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/lmosnode/lmosnode/node/httpapi"
)

// ContentTypeTD is the media type of a Thing Description.
const ContentTypeTD = "application/td+json"

// The security definitions of the consumer view: nosec for an API on
// loopback that takes no credentials, bearer for an API that requires
// "Authorization: Bearer <token>" (Config.BearerAuth).
const (
	nosecName  = "nosec_sc"
	bearerName = "bearer_sc"
)

// getTD serves GET /things/{id}/td: the consumer view of the Thing's TD
// (see the package documentation).
func (h *Handler) getTD(w http.ResponseWriter, r *http.Request) {
	t, p := h.resolve(r, false)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	rec, err := t.entry.Record()
	if err != nil || rec.Tombstone() {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s was removed", t.entry.ThingID, t.entry.Publisher))
		return
	}
	view, err := ConsumerView(rec.Raw, "http://"+r.Host, t.query(), h.cfg.BearerAuth)
	if err != nil {
		httpapi.WriteProblem(w, r, httpapi.Problemf(http.StatusInternalServerError, "Thing %q of %s: %v", t.entry.ThingID, t.entry.Publisher, err))
		return
	}
	w.Header().Set("Content-Type", ContentTypeTD)
	w.Header().Set("Content-Length", strconv.Itoa(len(view)))
	w.Header().Set("LMOS-Publisher", t.entry.Publisher.String())
	w.Header().Set("Link", fmt.Sprintf("</things/%s%s>; rel=\"canonical\"", url.PathEscape(t.entry.ThingID), t.query()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(view)
}

// ConsumerView returns the unsigned consumer view of the signed TD td for
// a node whose API is at base (e.g. "http://127.0.0.1:5080"): "proof" and
// "base" dropped, every affordance's forms pointing at base's HTTP binding
// (query, e.g. "?publisher=…" or "", appended to every href), Thing-level
// forms dropped, the bearer security scheme if bearer is set (the API
// requires a token), else nosec. Everything else is kept as published.
func ConsumerView(td []byte, base, query string, bearer bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(td))
	dec.UseNumber() // keep numbers exactly as published
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding TD: %w", err)
	}
	id, _ := doc["id"].(string)
	prefix := base + "/things/" + url.PathEscape(id)
	delete(doc, "proof")
	delete(doc, "base")
	delete(doc, "forms")
	if bearer {
		doc["securityDefinitions"] = map[string]any{bearerName: map[string]any{"scheme": "bearer", "in": "header", "name": "Authorization"}}
		doc["security"] = bearerName
	} else {
		doc["securityDefinitions"] = map[string]any{nosecName: map[string]any{"scheme": "nosec"}}
		doc["security"] = nosecName
	}

	form := func(href, method string, ops ...string) map[string]any {
		f := map[string]any{"href": href + query, "contentType": "application/json", "htv:methodName": method}
		if len(ops) == 1 {
			f["op"] = ops[0]
		} else {
			f["op"] = ops
		}
		return f
	}
	for name, a := range affordances(doc, "properties") {
		href := prefix + "/properties/" + url.PathEscape(name)
		var forms []any
		if b, _ := a["writeOnly"].(bool); !b {
			forms = append(forms, form(href, http.MethodGet, "readproperty"))
		}
		if b, _ := a["readOnly"].(bool); !b {
			forms = append(forms, form(href, http.MethodPut, "writeproperty"))
		}
		if b, _ := a["observable"].(bool); b {
			f := form(href+"/observe", http.MethodGet, "observeproperty", "unobserveproperty")
			f["subprotocol"] = "sse"
			forms = append(forms, f)
		}
		a["forms"] = forms
	}
	for name, a := range affordances(doc, "actions") {
		a["forms"] = []any{form(prefix+"/actions/"+url.PathEscape(name), http.MethodPost, "invokeaction")}
	}
	for name, a := range affordances(doc, "events") {
		f := form(prefix+"/events/"+url.PathEscape(name), http.MethodGet, "subscribeevent", "unsubscribeevent")
		f["subprotocol"] = "sse"
		a["forms"] = []any{f}
	}
	return json.Marshal(doc)
}

// affordances returns the affordance objects of doc's member kind.
func affordances(doc map[string]any, kind string) map[string]map[string]any {
	m, _ := doc[kind].(map[string]any)
	out := make(map[string]map[string]any, len(m))
	for name, v := range m {
		if a, ok := v.(map[string]any); ok {
			out[name] = a
		}
	}
	return out
}
