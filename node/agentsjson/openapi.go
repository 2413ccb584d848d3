package agentsjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// OpenAPIVersion is the OpenAPI version of the sources the node writes:
// 3.1, whose schema objects are JSON Schema (2020-12), so that a TD's
// data schemas carry over as they are.
const OpenAPIVersion = "3.1.0"

// obj is a JSON object under construction.
type obj = map[string]any

// affordanceKeys are the members of a property affordance that are not
// data schema keywords; the schema of a property's value leaves them out.
var affordanceKeys = []string{"forms", "observable", "uriVariables"}

// thingAPI is what one Thing contributes to the document: the OpenAPI
// document of its HTTP binding and a flow per action and per readable
// property.
type thingAPI struct {
	openAPI obj
	flows   []Flow
}

// describe builds the thingAPI of the consumer view view (the TD with
// forms pointing at this node, gateway.ConsumerView) as source sourceID.
// Each action is an operation invoke_<name> (its form's method and URL,
// the form's query as required parameters of fixed value, the action's
// input as JSON request body, its output as the 200 answer); each
// readable property an operation read_<name> (GET). Affordances without
// an HTTP form are left out.
func describe(view []byte, sourceID string) (thingAPI, error) {
	dec := json.NewDecoder(bytes.NewReader(view))
	dec.UseNumber() // keep numbers as published
	var td obj
	if err := dec.Decode(&td); err != nil {
		return thingAPI{}, fmt.Errorf("decoding the consumer view: %w", err)
	}
	title, _ := td["title"].(string)
	desc, _ := td["description"].(string)
	d := &describer{sourceID: sourceID, thing: title, paths: obj{}, used: map[string]bool{}}
	actions, _ := td["actions"].(obj)
	for _, name := range sortedKeys(actions) {
		if a, ok := actions[name].(obj); ok {
			d.action(name, a)
		}
	}
	properties, _ := td["properties"].(obj)
	for _, name := range sortedKeys(properties) {
		if p, ok := properties[name].(obj); ok {
			d.property(name, p)
		}
	}
	if d.server == "" {
		return thingAPI{}, nil
	}
	info := obj{"title": title, "version": "1.0.0"}
	if desc != "" {
		info["description"] = desc
	}
	doc := obj{"openapi": OpenAPIVersion, "info": info, "servers": []any{obj{"url": d.server}}, "paths": d.paths}
	if td["security"] == bearerSecurity {
		doc["components"] = obj{"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer",
			"description": "The node's API token: Authorization: Bearer <token>."}}}
		doc["security"] = []any{obj{"bearer": []any{}}}
	}
	return thingAPI{openAPI: doc, flows: d.flows}, nil
}

// bearerSecurity is the consumer view's security when the API requires
// the bearer token (gateway's bearer_sc).
const bearerSecurity = "bearer_sc"

// describer collects the operations and flows of one Thing.
type describer struct {
	sourceID string
	thing    string // the Thing's title
	server   string // scheme://host of the forms
	paths    obj
	used     map[string]bool // operation ids
	flows    []Flow
}

// operation adds the operation of method on the form href of an
// affordance, with the id prefix_<name> made unique, and returns its id
// ("" if the href is unusable).
func (d *describer) operation(prefix, name, method, href string, op obj) string {
	u, err := url.Parse(href)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	server := u.Scheme + "://" + u.Host
	if d.server != "" && d.server != server {
		return "" // every form of a consumer view names the same API
	}
	d.server = server
	id := prefix + "_" + snake(name)
	for i := 2; d.used[id]; i++ {
		id = fmt.Sprintf("%s_%s_%d", prefix, snake(name), i)
	}
	d.used[id] = true
	op["operationId"] = id
	var params []any
	q := u.Query()
	for _, k := range sortedKeys(valuesObj(q)) {
		v := q.Get(k)
		params = append(params, obj{"name": k, "in": "query", "required": true,
			"description": "Always " + v + ": it selects the Thing's publisher on this node.",
			"schema":      obj{"type": "string", "enum": []any{v}, "default": v}})
	}
	if params != nil {
		op["parameters"] = params
	}
	item, _ := d.paths[u.EscapedPath()].(obj)
	if item == nil {
		item = obj{}
		d.paths[u.EscapedPath()] = item
	}
	item[strings.ToLower(method)] = op
	return id
}

// action adds the operation and the flow of the action name, a.
func (d *describer) action(name string, a obj) {
	href, method := httpForm(a, "invokeaction")
	if href == "" {
		return
	}
	title, desc := texts(name, a)
	op := obj{"summary": title, "responses": obj{
		"200":     obj{"description": "Completed: the action's output", "content": obj{"application/json": obj{"schema": schemaOr(a["output"])}}},
		"201":     obj{"description": "Long-running: Location names the invocation, which GET reads and DELETE cancels; the body is its status"},
		"204":     obj{"description": "Completed without output"},
		"default": problemResponse(),
	}}
	if desc != "" {
		op["description"] = desc
	}
	input, hasInput := a["input"].(obj)
	if hasInput {
		op["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": input}}}
	}
	opID := d.operation("invoke", name, method, href, op)
	if opID == "" {
		return
	}
	f := d.flow(opID, title, desc, "Invokes the action "+name, a["output"])
	if hasInput {
		inputFields(&f, input)
	}
	d.flows = append(d.flows, f)
}

// property adds the read operation and flow of the property name, p,
// if it is readable.
func (d *describer) property(name string, p obj) {
	href, method := httpForm(p, "readproperty")
	if href == "" {
		return
	}
	title, desc := texts(name, p)
	value := obj{}
	for k, v := range p {
		if !slices.Contains(affordanceKeys, k) {
			value[k] = v
		}
	}
	op := obj{"summary": "Read " + title, "responses": obj{
		"200":     obj{"description": "The property's value", "content": obj{"application/json": obj{"schema": value}}},
		"default": problemResponse(),
	}}
	if desc != "" {
		op["description"] = desc
	}
	opID := d.operation("read", name, method, href, op)
	if opID == "" {
		return
	}
	d.flows = append(d.flows, d.flow(opID, "Read "+title, desc, "Reads the property "+name, value))
}

// flow is the flow of the one operation opID, without fields yet: its
// title the Thing's and the affordance's, its description the
// affordance's, else what (the operation's kind and name) of the Thing.
func (d *describer) flow(opID, title, desc, what string, output any) Flow {
	if desc == "" {
		desc = what + " of " + d.thing + "."
	}
	return Flow{
		ID: d.sourceID + "_" + opID, Title: d.thing + ": " + title, Description: desc,
		Actions: []Action{{ID: opID, SourceID: d.sourceID, OperationID: opID}},
		Fields:  Fields{Parameters: []Parameter{}, Responses: Responses{Success: mustJSON(schemaOr(output))}},
	}
}

// inputFields sets the fields and links of flow f from the action's
// input schema: the members of an object input are the flow's
// parameters, each linked to the member of the request body; any other
// input is the flow's request body, linked to the operation's.
func inputFields(f *Flow, input obj) {
	act := f.Actions[0].ID
	props, _ := input["properties"].(obj)
	if input["type"] != "object" || len(props) == 0 {
		f.Fields.RequestBody = &RequestBody{Required: true, Content: map[string]MediaType{"application/json": {Schema: mustJSON(input)}}}
		f.Links = []Link{{Origin: LinkEnd{ActionID: f.ID, FieldPath: "requestBody"}, Target: LinkEnd{ActionID: act, FieldPath: "requestBody"}}}
		return
	}
	required, _ := input["required"].([]any)
	for _, name := range sortedKeys(props) {
		s, _ := props[name].(obj)
		p := Parameter{Name: name, Required: slices.Contains(required, any(name))}
		p.Type, _ = s["type"].(string)
		p.Description, _ = s["description"].(string)
		if p.Description == "" {
			p.Description, _ = s["title"].(string)
		}
		f.Fields.Parameters = append(f.Fields.Parameters, p)
		f.Links = append(f.Links, Link{Origin: LinkEnd{ActionID: f.ID, FieldPath: "parameters." + name},
			Target: LinkEnd{ActionID: act, FieldPath: "requestBody." + name}})
	}
}

// httpForm returns the href and method of the affordance's first HTTP
// form for op.
func httpForm(a obj, op string) (href, method string) {
	forms, _ := a["forms"].([]any)
	for _, f := range forms {
		f, _ := f.(obj)
		m, _ := f["htv:methodName"].(string)
		h, _ := f["href"].(string)
		if m == "" || !strings.HasPrefix(h, "http") {
			continue
		}
		switch ops := f["op"].(type) {
		case string:
			if ops == op {
				return h, m
			}
		case []any:
			if slices.Contains(ops, any(op)) {
				return h, m
			}
		}
	}
	return "", ""
}

// texts are the title (else name) and description of an affordance.
func texts(name string, a obj) (title, desc string) {
	title, _ = a["title"].(string)
	if title == "" {
		title = name
	}
	desc, _ = a["description"].(string)
	return title, desc
}

func problemResponse() obj {
	return obj{"description": "An RFC 9457 problem", "content": obj{"application/problem+json": obj{"schema": obj{"type": "object"}}}}
}

// schemaOr is s as a schema, the empty schema if s is none.
func schemaOr(s any) obj {
	if m, ok := s.(obj); ok {
		return m
	}
	return obj{}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`) // impossible: decoded JSON values
	}
	return b
}

// sortedKeys are the keys of the JSON object m (none if m is not one).
func sortedKeys(m any) []string {
	o, _ := m.(obj)
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func valuesObj(q url.Values) obj {
	o := obj{}
	for k := range q {
		o[k] = true
	}
	return o
}

// snake is s in snake_case: lower-case letters and digits, every other
// run of characters one underscore; "x" if nothing is left, and
// prefixed with "x_" if it starts with a digit.
func snake(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			under = false
			continue
		}
		under = true
	}
	out := b.String()
	switch {
	case out == "":
		return "x"
	case out[0] >= '0' && out[0] <= '9':
		return "x_" + out
	}
	return out
}
