package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lmosnode/lmosnode/node/did"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ContentTypeTD is the media type of a Thing Description.
const ContentTypeTD = "application/td+json"

// ContextMQTT is the namespace of the W3C WoT MQTT binding template's
// vocabulary (mqv:controlPacket, mqv:topic, mqv:filter).
const ContextMQTT = "http://www.example.org/mqtt-binding#"

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
	view, p := h.view(r, t)
	if p != nil {
		httpapi.WriteProblem(w, r, p)
		return
	}
	w.Header().Set("Content-Type", ContentTypeTD)
	w.Header().Set("Content-Length", strconv.Itoa(len(view)))
	w.Header().Set("LMOS-Publisher", t.entry.Publisher.String())
	if h.deps.Trust != nil {
		w.Header().Set("LMOS-Trust", string(h.deps.Trust.Mark(t.entry.Publisher)))
	}
	if h.deps.Orgs != nil {
		if rec, err := t.entry.Record(); err == nil {
			w.Header().Set("LMOS-Organization", h.deps.Orgs.Of(t.entry.Publisher, rec.TD.Organization()).Status())
		}
	}
	w.Header().Set("Link", fmt.Sprintf("</things/%s%s>; rel=\"canonical\"", url.PathEscape(t.entry.ThingID), t.query()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(view)
}

// ConsumerViewOf returns the consumer view of the directory entry e for
// the consumer of request r (its Host and scheme name the API), its forms
// pinned to e's publisher (?publisher=), as a directory listing for
// consumers needs it: several publishers of one id may be listed. The
// caller has checked that r's consumer may see e. A removed Thing is an
// error.
func (h *Handler) ConsumerViewOf(r *http.Request, e directory.Entry) ([]byte, error) {
	view, p := h.view(r, target{entry: e, pinned: true})
	if p != nil {
		return nil, p
	}
	return view, nil
}

// view builds the consumer view of t for the consumer of r.
func (h *Handler) view(r *http.Request, t target) ([]byte, *lmosproto.Problem) {
	rec, err := t.entry.Record()
	if err != nil || rec.Tombstone() {
		return nil, httpapi.Problemf(http.StatusNotFound, "Thing %q of %s was removed", t.entry.ThingID, t.entry.Publisher)
	}
	base := h.apiBase(r)
	v := View{Base: base, Query: t.query(), Bearer: h.cfg.BearerAuth, Publisher: t.entry.Publisher.String()}
	if h.deps.Trust != nil {
		v.Trust = string(h.deps.Trust.Mark(t.entry.Publisher))
	}
	if h.deps.Orgs != nil {
		v.Organization = h.deps.Orgs.Of(t.entry.Publisher, rec.TD.Organization())
	}
	if h.cfg.WebSocketPath != "" {
		v.WebSocket = "ws" + strings.TrimPrefix(base, "http") + h.cfg.WebSocketPath
	}
	if h.deps.Broker != nil {
		if broker, topic, ok := h.deps.Broker.MQTT(t.entry); ok {
			v.MQTT = &MQTTForms{Broker: broker, Topic: topic}
		}
	}
	view, err := ConsumerView(rec.Raw, v)
	if err != nil {
		return nil, httpapi.Problemf(http.StatusInternalServerError, "Thing %q of %s: %v", t.entry.ThingID, t.entry.Publisher, err)
	}
	return view, nil
}

// apiBase is the URL of the API as the consumer of r reached it.
func (h *Handler) apiBase(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// View is what a node offers a consumer for one Thing: the transports
// whose forms its consumer view carries.
type View struct {
	// Base is the URL of the node's API, e.g. "http://127.0.0.1:5080":
	// the HTTP binding's forms point at its /things/{id}/… routes.
	// Required.
	Base string
	// Query (e.g. "?publisher=…" or "") is appended to every HTTP href.
	Query string
	// Bearer: the API requires a bearer token (else nosec).
	Bearer bool
	// Publisher, if set, is the peer ID of the Thing's publisher, which
	// the view names in lmos:publisher (the proof that names it is
	// dropped); Trust, if set, its mark in the node's trust list (own,
	// trusted, denied, unknown), in lmos:trust.
	Publisher, Trust string
	// Organization, if set, is the organisation the TD claims, checked
	// against its DID document: lmos:organizationStatus ({did, domain,
	// verified, reason}; docs/identity.md).
	Organization *did.Organization
	// WebSocket, if set, is the URL of the node's lmosprotocol endpoint
	// (e.g. "ws://127.0.0.1:5080/ws"): every affordance gets a form with
	// subprotocol lmosprotocol there.
	WebSocket string
	// MQTT, if set, adds the forms of the node's MQTT binding.
	MQTT *MQTTForms
}

// MQTTForms is the MQTT binding of one Thing on the node's broker.
type MQTTForms struct {
	// Broker is the broker's URL ("mqtt://127.0.0.1:1883").
	Broker string
	// Topic returns the topic of the Thing's levels after the Thing ID
	// ("properties", name, "read"), escaped as the MQTT gateway escapes
	// them.
	Topic func(levels ...string) string
}

// ConsumerView returns the unsigned consumer view of the signed TD td for
// the transports of v: "proof" and "base" dropped; "@context" led by the
// TD 1.0 and the TD 1.1 context URIs, then the published context's other
// entries (the LMOS binding among them), so that consumers of either TD
// generation accept it; every affordance's forms absolute and pointing at
// this node: the HTTP binding under v.Base first, then the WebSocket
// binding (subprotocol lmosprotocol) and the MQTT binding when v offers
// them; Thing-level forms only for the WebSocket binding's
// writemultipleproperties and subscribeallevents; the bearer security
// scheme if v.Bearer, else nosec; lmos:publisher and lmos:trust when v
// names them. Everything else is kept as published.
func ConsumerView(td []byte, v View) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(td))
	dec.UseNumber() // keep numbers exactly as published
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding TD: %w", err)
	}
	id, _ := doc["id"].(string)
	setConsumerMembers(doc, v)
	fm := formMaker{v: v, prefix: v.Base + "/things/" + url.PathEscape(id)}
	properties := affordances(doc, "properties")
	for name, a := range properties {
		a["forms"] = fm.propertyForms(name, a)
	}
	for name, a := range affordances(doc, "actions") {
		a["forms"] = fm.actionForms(name)
	}
	events := affordances(doc, "events")
	for name, a := range events {
		a["forms"] = fm.eventForms(name)
	}
	if v.WebSocket != "" {
		var ops []string
		if hasWritable(properties) {
			ops = append(ops, "writemultipleproperties")
		}
		if len(events) > 0 {
			ops = append(ops, "subscribeallevents", "unsubscribeallevents")
		}
		if len(ops) > 0 {
			doc["forms"] = []any{fm.ws(ops...)}
		}
	}
	return json.Marshal(doc)
}

// MemberOrganizationStatus is the consumer view's member that shows the
// organisation the TD claims, checked: {did, domain, verified, reason}.
const MemberOrganizationStatus = lmosproto.PrefixLMOS + ":organizationStatus"

// setConsumerMembers sets the Thing-level members of the consumer view
// doc: "proof", "base" and "forms" dropped, the consumer @context,
// lmos:publisher and lmos:trust as v names them, the security scheme.
func setConsumerMembers(doc map[string]any, v View) {
	delete(doc, "proof")
	delete(doc, "base")
	delete(doc, "forms")
	doc["@context"] = consumerContext(doc["@context"], v.MQTT != nil)
	if v.Publisher != "" {
		doc[lmosproto.PrefixLMOS+":publisher"] = v.Publisher
	}
	if v.Trust != "" {
		doc[lmosproto.PrefixLMOS+":trust"] = v.Trust
	}
	if v.Organization != nil {
		doc[MemberOrganizationStatus] = v.Organization
	}
	if v.Bearer {
		doc["securityDefinitions"] = map[string]any{bearerName: map[string]any{"scheme": "bearer", "in": "header", "name": "Authorization"}}
		doc["security"] = bearerName
	} else {
		doc["securityDefinitions"] = map[string]any{nosecName: map[string]any{"scheme": "nosec"}}
		doc["security"] = nosecName
	}
}

// formMaker makes the forms of a consumer view for the transports of v;
// prefix is the URL of the Thing under v.Base.
type formMaker struct {
	v      View
	prefix string
}

// http is a form of the HTTP binding: method on href, for ops.
func (fm formMaker) http(href, method string, ops ...string) map[string]any {
	f := map[string]any{"href": href + fm.v.Query, "contentType": "application/json", "htv:methodName": method}
	setOps(f, ops)
	return f
}

// ws is a form of the WebSocket binding for ops.
func (fm formMaker) ws(ops ...string) map[string]any {
	f := map[string]any{"href": fm.v.WebSocket, "subprotocol": lmosproto.WebSocketSubprotocol, "contentType": "application/json"}
	setOps(f, ops)
	return f
}

// mqtt is a form of the MQTT binding for ops: the control packet
// (publish, subscribe) on topic.
func (fm formMaker) mqtt(packet string, topic string, ops ...string) map[string]any {
	f := map[string]any{"href": fm.v.MQTT.Broker, "contentType": "application/json", "mqv:controlPacket": packet}
	if packet == "subscribe" {
		f["mqv:filter"] = topic
	} else {
		f["mqv:topic"] = topic
	}
	setOps(f, ops)
	return f
}

// propertyForms are the forms of property name, a: read unless
// writeOnly, write unless readOnly, observe if observable, on every
// transport.
func (fm formMaker) propertyForms(name string, a map[string]any) []any {
	href := fm.prefix + "/properties/" + url.PathEscape(name)
	readable := !isTrue(a["writeOnly"])
	writable := !isTrue(a["readOnly"])
	observable := isTrue(a["observable"])
	var forms []any
	var wsOps []string
	if readable {
		forms = append(forms, fm.http(href, http.MethodGet, "readproperty"))
		wsOps = append(wsOps, "readproperty")
	}
	if writable {
		forms = append(forms, fm.http(href, http.MethodPut, "writeproperty"))
		wsOps = append(wsOps, "writeproperty")
	}
	if observable {
		f := fm.http(href+"/observe", http.MethodGet, "observeproperty", "unobserveproperty")
		f["subprotocol"] = "sse"
		forms = append(forms, f)
		wsOps = append(wsOps, "observeproperty", "unobserveproperty")
	}
	if fm.v.WebSocket != "" && len(wsOps) > 0 {
		forms = append(forms, fm.ws(wsOps...))
	}
	if fm.v.MQTT != nil {
		topic := fm.v.MQTT.Topic
		if readable {
			forms = append(forms, fm.mqtt("publish", topic("properties", name, "read"), "readproperty"))
		}
		if writable {
			forms = append(forms, fm.mqtt("publish", topic("properties", name, "write"), "writeproperty"))
		}
		if observable {
			forms = append(forms, fm.mqtt("subscribe", topic("properties", name), "observeproperty", "unobserveproperty"))
		}
	}
	return forms
}

// actionForms are the forms of action name on every transport.
func (fm formMaker) actionForms(name string) []any {
	forms := []any{fm.http(fm.prefix+"/actions/"+url.PathEscape(name), http.MethodPost, "invokeaction")}
	if fm.v.WebSocket != "" {
		forms = append(forms, fm.ws("invokeaction", "queryaction", "cancelaction"))
	}
	if fm.v.MQTT != nil {
		forms = append(forms, fm.mqtt("publish", fm.v.MQTT.Topic("actions", name), "invokeaction", "queryaction", "cancelaction"))
	}
	return forms
}

// eventForms are the forms of event name on every transport (SSE over
// HTTP).
func (fm formMaker) eventForms(name string) []any {
	f := fm.http(fm.prefix+"/events/"+url.PathEscape(name), http.MethodGet, "subscribeevent", "unsubscribeevent")
	f["subprotocol"] = "sse"
	forms := []any{f}
	if fm.v.WebSocket != "" {
		forms = append(forms, fm.ws("subscribeevent", "unsubscribeevent"))
	}
	if fm.v.MQTT != nil {
		forms = append(forms, fm.mqtt("subscribe", fm.v.MQTT.Topic("events", name), "subscribeevent", "unsubscribeevent"))
	}
	return forms
}

// consumerContext is the @context of a consumer view: the TD 1.0 and TD
// 1.1 URIs first (TD 1.1 § 5.3.1.1 allows this order, and node-wot's
// validator wants the TD 1.0 URI first), then the published context's
// other entries in their order, then the MQTT binding's prefix if the view
// has MQTT forms.
func consumerContext(published any, mqtt bool) []any {
	out := []any{lmosproto.ContextTD10, lmosproto.ContextTD11}
	var rest []any
	switch c := published.(type) {
	case string:
		rest = []any{c}
	case []any:
		rest = c
	}
	for _, c := range rest {
		if c == lmosproto.ContextTD10 || c == lmosproto.ContextTD11 {
			continue
		}
		out = append(out, c)
	}
	if mqtt {
		out = append(out, map[string]any{"mqv": ContextMQTT})
	}
	return out
}

// setOps sets a form's op: a string for one operation, else an array.
func setOps(f map[string]any, ops []string) {
	if len(ops) == 1 {
		f["op"] = ops[0]
		return
	}
	f["op"] = ops
}

func isTrue(v any) bool {
	b, _ := v.(bool)
	return b
}

// hasWritable reports whether a property is not readOnly.
func hasWritable(props map[string]map[string]any) bool {
	for _, a := range props {
		if !isTrue(a["readOnly"]) {
			return true
		}
	}
	return false
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
