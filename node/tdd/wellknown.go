package tdd

import (
	"maps"
	"net/http"
	"strconv"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// ContextDiscovery is the JSON-LD context of the WoT Discovery vocabulary
// (ThingDirectory, ThingID).
const ContextDiscovery = "https://www.w3.org/2022/wot/discovery"

// wellKnown serves GET /.well-known/wot: the directory's own TD. It
// depends on the configuration and the base URL only: it is rendered once
// per base URL and served with an ETag and 304 (httpapi.DocCache).
func (h *Handler) wellKnown(w http.ResponseWriter, r *http.Request) {
	h.docs.Handler(func(r *http.Request) (string, string, bool) { return h.base(r), "", true },
		http.HandlerFunc(h.renderWellKnown)).ServeHTTP(w, r)
}

// renderWellKnown writes the directory's own TD.
func (h *Handler) renderWellKnown(w http.ResponseWriter, r *http.Request) {
	doc, err := encodeJSON(h.DirectoryTD(h.base(r)))
	if err != nil { // impossible: the TD is built of plain values
		h.writeInternal(w, r, "describe directory", "", err)
		return
	}
	doc = append(doc, '\n')
	w.Header().Set("Content-Type", ContentTypeTD)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
}

// obj is a JSON object under construction.
type obj = map[string]any

// DirectoryTD returns the Thing Description of the directory served at
// base (an http(s) URL without a trailing slash): a ThingDirectory TD
// following the one in the WoT Discovery spec, with the LMOS filters as
// URI variables of the listing. It is a valid TD by proto.ValidateTD and
// is not signed: it describes this node's API, not a published Thing.
func (h *Handler) DirectoryTD(base string) map[string]any {
	td := obj{
		"@context":    []any{lmosproto.ContextTD10, lmosproto.ContextTD11, ContextDiscovery, obj{lmosproto.PrefixLMOS: lmosproto.ContextLMOS}},
		"@type":       "ThingDirectory",
		"id":          "urn:lmos:directory:" + h.deps.PeerID.String(),
		"title":       "lmosnode Thing Description Directory",
		"description": "The W3C WoT Thing Description Directory of LMOS node " + h.deps.PeerID.String() + ": its own Things and the Things it learned from the federation, as signed TDs.",
		"version":     obj{"instance": "1.0.0"},
		"base":        base,
		"properties":  obj{"things": h.thingsAffordance()},
		"actions":     directoryActions(),
		"events": obj{
			"thingCreated": directoryEvent("thing_created", "Registration of Thing Descriptions inside the directory"),
			"thingUpdated": directoryEvent("thing_updated", "Updates to Thing Descriptions within the directory"),
			"thingDeleted": directoryEvent("thing_deleted", "Deletion of Thing Descriptions from the directory"),
		},
	}
	h.secureDirectoryTD(td)
	return td
}

// secureDirectoryTD sets the security of the directory TD td: nosec, the
// bearer token on every form (Config.BearerAuth), or on the forms of the
// actions that write (Config.BearerWrites).
func (h *Handler) secureDirectoryTD(td obj) {
	nosec := obj{"scheme": "nosec",
		"description": "The API listens on loopback only and refuses non-loopback Host headers."}
	bearer := obj{"scheme": "bearer", "in": "header", "name": "Authorization",
		"description": "Every request carries the node's API token: Authorization: Bearer <token>."}
	switch {
	case h.cfg.BearerAuth:
		td["securityDefinitions"] = obj{"bearer_sc": bearer}
		td["security"] = "bearer_sc"
	case h.cfg.BearerWrites:
		// The writes act as the node: their forms need the token.
		bearer["description"] = "The writes carry the node's API token: Authorization: Bearer <token>."
		td["securityDefinitions"] = obj{"nosec_sc": nosec, "bearer_sc": bearer}
		td["security"] = "nosec_sc"
		for _, a := range td["actions"].(obj) {
			if safe, _ := a.(obj)["safe"].(bool); !safe {
				for _, f := range a.(obj)["forms"].([]any) {
					f.(obj)["security"] = "bearer_sc"
				}
			}
		}
	default:
		td["securityDefinitions"] = obj{"nosec_sc": nosec}
		td["security"] = "nosec_sc"
	}
}

// thingsAffordance is the directory TD's things property: the listing,
// with the LMOS filters as URI variables.
func (h *Handler) thingsAffordance() obj {
	things := h.thingsProperty()
	return obj{
		"description": things.desc,
		"readOnly":    true,
		"type":        "array",
		"items":       obj{"type": "object"},
		"uriVariables": obj{
			"offset":     obj{"title": "Number of TDs to skip before the page", "type": "integer", "minimum": 0},
			"limit":      obj{"title": "Number of TDs in the page", "type": "integer", "minimum": 1},
			"format":     obj{"title": "Payload format: a JSON array of TDs, or a ThingCollection", "type": "string", "enum": []any{"array", "collection"}},
			"sort_by":    obj{"title": "Field to order by (default id, in Unicode code point order)", "type": "string", "enum": []any{"id", "title", "created", "modified"}},
			"sort_order": obj{"title": "Order", "type": "string", "enum": []any{"asc", "desc"}},
			"type":       stringVar("agent, tool, or any @type of the Thing"),
			"capability": stringVar("An lmos:capabilities id, optionally followed by @ and a semantic version range (weather-forecast@^1.2)"),
			"vendor":     stringVar("lmos:vendor name, case-insensitive"),
			"publisher":  stringVar("Publisher peer ID or did:key"),
			"group":      stringVar("An lmos:groups id"),
			"q":          stringVar("Free text over title, description and capabilities, ranked"),
			"online":     obj{"title": "true: only Things whose publisher is online (online Things are always listed first)", "type": "boolean"},
		},
		"forms": []any{obj{
			"op":             "readproperty",
			"href":           things.href,
			"htv:methodName": "GET",
			"contentType":    ContentTypeLDJSON,
			"response": obj{
				"description": things.resp,
				"contentType": ContentTypeLDJSON,
				"htv:headers": []any{obj{"htv:fieldName": "Link"}, obj{"htv:fieldName": HeaderOnline}},
			},
			"additionalResponses": []any{problemResponse(http.StatusBadRequest, "Invalid query arguments")},
		}},
	}
}

// directoryActions are the directory TD's actions: the reads (retrieve a
// Thing, search) and the writes of the node's own Things.
func directoryActions() obj {
	actions := writeActions()
	maps.Copy(actions, readActions())
	return actions
}

// writeActions are the directory TD's actions that create, update and
// delete the node's own Things.
func writeActions() obj {
	idVar := obj{"id": thingIDVar()}
	tdInput := obj{"description": "A Thing Description (TD 1.1 with the LMOS vocabulary). The node signs it and sets lmos:seq.", "type": "object"}
	forbidden := problemResponse(http.StatusForbidden, "The Thing is another publisher's and read-only")
	invalid := problemResponse(http.StatusBadRequest, "Invalid serialization or TD; validationErrors name the fields by JSON pointer")
	return obj{
		"createThing": obj{
			"description":  "Create a Thing Description of this node with the given id",
			"uriVariables": idVar,
			"input":        tdInput,
			"forms": []any{obj{
				"href": "/things/{id}", "htv:methodName": "PUT", "contentType": ContentTypeTD,
				"response":            noContentResponse(http.StatusCreated, "Created"),
				"additionalResponses": []any{invalid, forbidden},
			}},
		},
		"createAnonymousThing": obj{
			"description": "Create a Thing Description without id; the directory assigns a urn:uuid id",
			"input":       tdInput,
			"forms": []any{obj{
				"href": "/things", "htv:methodName": "POST", "contentType": ContentTypeTD,
				"response": obj{
					"description": "Created; the Location header has the URL of the TD and its system-generated id",
					"contentType": "text/plain", "htv:statusCodeValue": http.StatusCreated,
					"htv:headers": []any{obj{"description": "URL of the created TD", "htv:fieldName": "Location"}},
				},
				"additionalResponses": []any{invalid},
			}},
		},
		"updateThing": obj{
			"description":  "Update a Thing Description of this node",
			"uriVariables": idVar,
			"input":        tdInput,
			"forms": []any{obj{
				"href": "/things/{id}", "htv:methodName": "PUT", "contentType": ContentTypeTD,
				"response":            noContentResponse(http.StatusNoContent, "Updated"),
				"additionalResponses": []any{invalid, forbidden},
			}},
		},
		"partiallyUpdateThing": obj{
			"description":  "Partially update a Thing Description of this node with a JSON merge patch (RFC 7396)",
			"uriVariables": idVar,
			"input":        obj{"description": "A JSON merge patch of the TD", "type": "object"},
			"forms": []any{obj{
				"href": "/things/{id}", "htv:methodName": "PATCH", "contentType": ContentTypeMergePatch,
				"response":            noContentResponse(http.StatusNoContent, "Updated"),
				"additionalResponses": []any{invalid, forbidden, notFoundResponse()},
			}},
		},
		"deleteThing": obj{
			"description":  "Remove a Thing Description of this node (a signed tombstone)",
			"uriVariables": idVar,
			"forms": []any{obj{
				"href": "/things/{id}", "htv:methodName": "DELETE",
				"response":            noContentResponse(http.StatusNoContent, "Deleted"),
				"additionalResponses": []any{forbidden, notFoundResponse()},
			}},
		},
	}
}

// readActions are the directory TD's actions that read: retrieve a Thing,
// search with JSONPath.
func readActions() obj {
	return obj{
		"retrieveThing": obj{
			"description": "Retrieve a Thing Description, signed as published; registration information in the LMOS-Registration header",
			"uriVariables": obj{"id": thingIDVar(), "publisher": stringVar(
				"Publisher of the Thing: a libp2p peer ID or did:key. Without it the node's own Thing wins; several other publishers give 300 Multiple Choices.")},
			"safe":       true,
			"idempotent": true,
			"output":     obj{"description": "The schema is implied by the content type", "type": "object"},
			"forms": []any{obj{
				"href": "/things/{id}{?publisher}", "htv:methodName": "GET",
				"response": obj{"description": "Success response", "contentType": ContentTypeTD,
					"htv:headers": []any{obj{"htv:fieldName": HeaderRegistration}, obj{"htv:fieldName": HeaderPublisher}}},
				"additionalResponses": []any{
					notFoundResponse(),
					problemResponse(http.StatusMultipleChoices, "Several publishers have a TD with the id; candidates lists them"),
				},
			}},
		},
		"searchJSONPath": obj{
			"description":  "Syntactic search over the Thing Descriptions this node may show, with a JSONPath query (RFC 9535); the selected nodes as a JSON array",
			"uriVariables": obj{"query": obj{"title": "A JSONPath query", "type": "string"}},
			"safe":         true,
			"idempotent":   true,
			"output":       obj{"type": "array"},
			"forms": []any{obj{
				"href": "/search/jsonpath{?query}", "htv:methodName": "GET",
				"response": obj{"description": "Success response", "contentType": ContentTypeJSON},
				"additionalResponses": []any{
					problemResponse(http.StatusBadRequest, "Missing, malformed, too long or too deeply nested query"),
					problemResponse(http.StatusServiceUnavailable, "The query ran out of time"),
				},
			}},
		},
	}
}

// directoryEvent is the directory TD's event affordance of the event type
// typ (thing_created, …).
func directoryEvent(typ, desc string) obj {
	return obj{
		"description":  desc,
		"uriVariables": obj{"diff": obj{"description": "Event data with the TD: the complete TD on thing_created, a JSON merge patch (RFC 7396) with the id on thing_updated; only the id on thing_deleted", "type": "boolean"}},
		"data": obj{"type": "object", "properties": obj{
			"id":        obj{"type": "string", "format": "iri-reference"},
			"publisher": obj{"type": "string", "description": "Peer ID of the Thing's publisher"},
		}},
		"forms": []any{obj{
			"op": "subscribeevent", "href": "/events/" + typ + "{?diff}",
			"subprotocol": "sse", "contentType": ContentTypeEventStream,
			"htv:headers": []any{obj{"description": "ID of the last event received, to resume after it (SSE)", "htv:fieldName": "Last-Event-ID"}},
		}},
	}
}

// thingIDVar is the URI variable id: the Thing's id.
func thingIDVar() obj {
	return obj{"@type": "ThingID", "title": "Thing Description ID", "type": "string", "format": "iri-reference"}
}

// stringVar is a string URI variable.
func stringVar(desc string) obj { return obj{"type": "string", "description": desc} }

// problemResponse is a form's response of an error status with a problem
// document.
func problemResponse(status int, desc string) obj {
	return obj{"description": desc, "contentType": ContentTypeProblem, "htv:statusCodeValue": status, "success": false}
}

// notFoundResponse is a form's response when there is no such Thing.
func notFoundResponse() obj {
	return problemResponse(http.StatusNotFound, "TD with the given id not found")
}

// noContentResponse is a form's response of a status without a body.
func noContentResponse(status int, desc string) obj {
	// TD 1.1 requires a contentType in a response; there is no body.
	return obj{"description": desc, "contentType": "text/plain", "htv:statusCodeValue": status}
}

// thingsProperty is what the directory TD's things property reads: with
// consumer views (Deps.ConsumerView), the listing of consumer views
// (view=consumer), which WoT consumers exploring the directory can
// consume; else the signed TDs.
func (h *Handler) thingsProperty() (p struct{ desc, href, resp string }) {
	const vars = "offset,limit,format,sort_by,sort_order,type,capability,vendor,publisher,group,q"
	if h.deps.ConsumerView == nil {
		p.desc = "Retrieve Thing Descriptions, filtered by the LMOS filters; ranked by relevance with q, else ordered by id (or sort_by)."
		p.href = "/things{?" + vars + "}"
		p.resp = "Success response: a JSON array of signed TDs; a Link header with rel=next leads to the next page"
		return p
	}
	p.desc = "Retrieve Thing Descriptions ready to consume: the consumer views of the Things (their forms point at this node; unsigned), " +
		"filtered by the LMOS filters; ranked by relevance with q, else ordered by id (or sort_by). " +
		"The signed TDs as published are the same listing without view=consumer, and retrieveThing."
	p.href = "/things?view=" + ViewConsumer + "{&" + vars + "}"
	p.resp = "Success response: a JSON array of consumer views; a Link header with rel=next leads to the next page"
	return p
}
