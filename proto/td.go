package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
)

// Thing Description member names that the model gives a typed field.
const (
	memberContext             = "@context"
	memberType                = "@type"
	memberID                  = "id"
	memberTitle               = "title"
	memberDescription         = "description"
	memberProperties          = "properties"
	memberActions             = "actions"
	memberEvents              = "events"
	memberForms               = "forms"
	memberLinks               = "links"
	memberSecurity            = "security"
	memberSecurityDefinitions = "securityDefinitions"
	memberProof               = "proof"

	memberReadOnly    = "readOnly"
	memberWriteOnly   = "writeOnly"
	memberObservable  = "observable"
	memberInput       = "input"
	memberOutput      = "output"
	memberSafe        = "safe"
	memberIdempotent  = "idempotent"
	memberSynchronous = "synchronous"
	memberData        = "data"

	memberHref        = "href"
	memberOp          = "op"
	memberContentType = "contentType"
	memberSubprotocol = "subprotocol"
	memberRel         = "rel"
	memberLinkType    = "type"
)

// LMOS vocabulary members (DESIGN.md, "Vocabulary beyond the spec").
const (
	memberLMOSMetadata     = "lmos:metadata"
	memberLMOSVendor       = "lmos:vendor"
	memberLMOSModel        = "lmos:model"
	memberLMOSName         = "lmos:name"
	memberLMOSURL          = "lmos:url"
	memberLMOSCapabilities = "lmos:capabilities"
	memberLMOSCapabilityID = "lmos:id"
	memberLMOSVersion      = "lmos:version"
	memberLMOSDescription  = "lmos:description"
	memberLMOSExamples     = "lmos:examples"
	memberLMOSGroups       = "lmos:groups"
	memberLMOSSeq          = "lmos:seq"
)

// TD is a W3C WoT Thing Description 1.1 with the LMOS vocabulary.
//
// The members the node works with have typed fields; every other member, at
// every level, is kept verbatim in Extra, so that ParseTD followed by
// MarshalJSON gives back the same JSON document (semantically: members are
// written in a fixed order and whitespace is not kept).
//
// A typed field's zero value means "absent" (nil for lists, maps, pointers
// and raw members, so an empty [] or {} is kept). Two JSON forms that a
// plain field cannot tell apart are remembered from parsing: a member
// present with an empty string (or lmos:seq 0), and a one-element array in a
// member that TD 1.1 allows as a string or an array (@type, security, op).
// A TD built in code writes a one-element @type, security or op as a single
// string. Extra must not repeat a typed member: such an entry is not
// written, the typed field is the one source of truth.
//
// A TD is not safe for concurrent mutation; Clone gives an independent copy.
type TD struct {
	// Context is "@context", kept raw: a string or an array of strings and
	// prefix-binding objects. LMOSContext returns the form lmosnode writes.
	Context json.RawMessage
	// Types is "@type", a string or an array of strings in JSON.
	Types       []string
	ID          string
	Title       string
	Description string

	Properties map[string]*PropertyAffordance
	Actions    map[string]*ActionAffordance
	Events     map[string]*EventAffordance
	// Forms are the Thing-level forms (readallproperties and friends).
	Forms []Form
	Links []Link

	// Security names the securityDefinitions entries that apply to every
	// form; a string or an array of strings in JSON.
	Security []string
	// SecurityDefinitions maps a name to its security scheme, kept raw.
	SecurityDefinitions map[string]json.RawMessage

	// Metadata is "lmos:metadata".
	Metadata *Metadata
	// Capabilities is "lmos:capabilities".
	Capabilities []Capability
	// Groups is "lmos:groups": the IDs of the groups whose members alone may
	// see and call this Thing. Nil means public.
	Groups []string
	// Seq is "lmos:seq", the publisher's sequence number for this Thing.
	Seq uint64

	// Proof is the W3C Data Integrity proof member "proof", kept raw: the
	// signing code works on document bytes.
	Proof json.RawMessage

	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage

	shape tdShape
}

// PropertyAffordance is an entry of a TD's "properties". A property
// affordance is also the data schema of the property's value: the schema
// keywords (type, properties, enum, minimum, …) are in Extra, and
// DataSchema returns them as one JSON Schema document.
type PropertyAffordance struct {
	Title       string
	Description string
	Forms       []Form
	ReadOnly    *bool
	WriteOnly   *bool
	Observable  *bool
	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage

	shape tdShape
}

// ActionAffordance is an entry of a TD's "actions".
type ActionAffordance struct {
	Title       string
	Description string
	Forms       []Form
	// Input and Output are the data schemas of the action's input and
	// output, kept raw.
	Input       json.RawMessage
	Output      json.RawMessage
	Safe        *bool
	Idempotent  *bool
	Synchronous *bool
	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage

	shape tdShape
}

// EventAffordance is an entry of a TD's "events".
type EventAffordance struct {
	Title       string
	Description string
	Forms       []Form
	// Data is the data schema of the event's notifications, kept raw.
	Data json.RawMessage
	// Extra holds every other member, verbatim (subscription, cancellation,
	// dataResponse, …).
	Extra map[string]json.RawMessage

	shape tdShape
}

// Form is a TD form: where and how to perform operations on a Thing or an
// affordance.
type Form struct {
	Href string
	// Op is the list of operation types; a string or an array in JSON.
	Op          []string
	ContentType string
	Subprotocol string
	// Security overrides the TD's security for this form; a string or an
	// array in JSON.
	Security []string
	// Extra holds every other member, verbatim (htv:methodName, response, …).
	Extra map[string]json.RawMessage

	shape tdShape
}

// Link is an entry of a TD's "links".
type Link struct {
	Href string
	Rel  string
	// Type is the media type of the link target (member "type").
	Type string
	// Extra holds every other member, verbatim (anchor, sizes, hreflang).
	Extra map[string]json.RawMessage

	shape tdShape
}

// Metadata is the LMOS "lmos:metadata" member.
type Metadata struct {
	// Vendor is "lmos:vendor".
	Vendor *Vendor
	// Model is "lmos:model", kept raw: deployments describe the model as a
	// string or as an object (lmos:name, lmos:version, …).
	Model json.RawMessage
	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage
}

// Vendor is the LMOS "lmos:vendor" member.
type Vendor struct {
	// Name is "lmos:name".
	Name string
	// URL is "lmos:url".
	URL string
	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage

	shape tdShape
}

// Capability is an element of "lmos:capabilities".
type Capability struct {
	// ID is "lmos:id", the name discovery matches on.
	ID string
	// Version is "lmos:version", a semantic version.
	Version string
	// Description is "lmos:description".
	Description string
	// Examples is "lmos:examples": sample requests the capability serves.
	Examples []string
	// Extra holds every other member, verbatim.
	Extra map[string]json.RawMessage

	shape tdShape
}

// tdShape remembers the JSON forms a parsed object had that its typed fields
// cannot express. It is set by parsing and never mutated afterwards, so
// copies share it.
type tdShape struct {
	// present lists members that were present with a zero value ("" or 0).
	present map[string]bool
	// array lists string-or-array members that were written as an array.
	array map[string]bool
}

// LMOSContext returns the @context lmosnode writes: the TD 1.0 context
// first (node-wot 0.9.2 expects it there), then TD 1.1, then the binding of
// the "lmos" prefix.
func LMOSContext() json.RawMessage {
	return json.RawMessage(`["` + ContextTD10 + `","` + ContextTD11 + `",{"` + PrefixLMOS + `":"` + ContextLMOS + `"}]`)
}

// ParseTD parses a Thing Description. It checks JSON syntax and the shape
// of the members the model types (a title is a string, forms an array of
// objects, …), nothing more: use ValidateTD for a full check. Errors name
// the member by its JSON pointer (errors.As to a ValidationError).
func ParseTD(data []byte) (*TD, error) {
	if len(data) > MaxTDSize {
		return nil, fmt.Errorf("proto: parse TD: %w", tooLarge(len(data)))
	}
	td := new(TD)
	if err := td.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("proto: parse TD: %w", err)
	}
	return td, nil
}

// Validate checks the TD as ValidateTD checks its JSON form.
func (td *TD) Validate() error {
	data, err := td.MarshalJSON()
	if err != nil {
		return err
	}
	return ValidateTD(data)
}

// HasType reports whether @type lists t (compared as written, e.g.
// "lmos:Agent"). A nil TD has no type.
func (td *TD) HasType(t string) bool { return td != nil && slices.Contains(td.Types, t) }

// IsAgent reports whether the Thing is typed lmos:Agent.
func (td *TD) IsAgent() bool { return td.HasType(TypeAgent) }

// IsTool reports whether the Thing is typed lmos:Tool.
func (td *TD) IsTool() bool { return td.HasType(TypeTool) }

// Vendor returns the vendor name from lmos:metadata, or "".
func (td *TD) Vendor() string {
	if td == nil || td.Metadata == nil || td.Metadata.Vendor == nil {
		return ""
	}
	return td.Metadata.Vendor.Name
}

// MemberOrganization is "lmos:organization": the DID (did:web or
// did:wba) of the organisation the publisher claims to belong to. It is a
// member of the signed TD, so the publisher's proof covers the claim;
// receivers check it against the organisation's DID document
// (docs/identity.md).
const MemberOrganization = "lmos:organization"

// Organization returns the TD's lmos:organization, "" if it has none (or
// not a string).
func (td *TD) Organization() string {
	if td == nil {
		return ""
	}
	return organization(td.Extra)
}

// OrganizationOf is the Organization of the TD doc (a signed record as
// stored), read without parsing the rest of it: a listing shows the claim
// of every TD it serves. "" for a document that is not a JSON object.
func OrganizationOf(doc []byte) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(doc, &members) != nil {
		return ""
	}
	return organization(members)
}

// organization reads lmos:organization from a TD's members.
func organization(members map[string]json.RawMessage) string {
	var s string
	if raw, ok := members[MemberOrganization]; !ok || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// SetOrganization sets the TD's lmos:organization; "" removes it.
func (td *TD) SetOrganization(did string) {
	if did == "" {
		delete(td.Extra, MemberOrganization)
		return
	}
	raw, _ := json.Marshal(did) // a string always marshals
	if td.Extra == nil {
		td.Extra = map[string]json.RawMessage{}
	}
	td.Extra[MemberOrganization] = raw
}

// DataSchema returns the data schema of the property's value: the
// affordance without the members that describe the interaction rather than
// the value (forms, observable, uriVariables).
func (p *PropertyAffordance) DataSchema() (json.RawMessage, error) {
	q := *p
	q.Forms, q.Observable = nil, nil
	q.Extra = maps.Clone(p.Extra)
	delete(q.Extra, "uriVariables")
	return q.MarshalJSON()
}

// Clone returns a deep copy of the TD.
func (td *TD) Clone() *TD {
	if td == nil {
		return nil
	}
	c := *td
	c.Context = bytes.Clone(td.Context)
	c.Types = slices.Clone(td.Types)
	c.Properties = cloneMap(td.Properties, (*PropertyAffordance).clone)
	c.Actions = cloneMap(td.Actions, (*ActionAffordance).clone)
	c.Events = cloneMap(td.Events, (*EventAffordance).clone)
	c.Forms = cloneForms(td.Forms)
	c.Links = cloneSlice(td.Links, Link.clone)
	c.Security = slices.Clone(td.Security)
	c.SecurityDefinitions = cloneRawMap(td.SecurityDefinitions)
	c.Metadata = td.Metadata.clone()
	c.Capabilities = cloneSlice(td.Capabilities, Capability.clone)
	c.Groups = slices.Clone(td.Groups)
	c.Proof = bytes.Clone(td.Proof)
	c.Extra = cloneRawMap(td.Extra)
	return &c
}

func (p *PropertyAffordance) clone() *PropertyAffordance {
	if p == nil {
		return nil
	}
	c := *p
	c.Forms = cloneForms(p.Forms)
	c.ReadOnly, c.WriteOnly, c.Observable = cloneBool(p.ReadOnly), cloneBool(p.WriteOnly), cloneBool(p.Observable)
	c.Extra = cloneRawMap(p.Extra)
	return &c
}

func (a *ActionAffordance) clone() *ActionAffordance {
	if a == nil {
		return nil
	}
	c := *a
	c.Forms = cloneForms(a.Forms)
	c.Input, c.Output = bytes.Clone(a.Input), bytes.Clone(a.Output)
	c.Safe, c.Idempotent, c.Synchronous = cloneBool(a.Safe), cloneBool(a.Idempotent), cloneBool(a.Synchronous)
	c.Extra = cloneRawMap(a.Extra)
	return &c
}

func (e *EventAffordance) clone() *EventAffordance {
	if e == nil {
		return nil
	}
	c := *e
	c.Forms = cloneForms(e.Forms)
	c.Data = bytes.Clone(e.Data)
	c.Extra = cloneRawMap(e.Extra)
	return &c
}

func (f Form) clone() Form {
	f.Op = slices.Clone(f.Op)
	f.Security = slices.Clone(f.Security)
	f.Extra = cloneRawMap(f.Extra)
	return f
}

func (l Link) clone() Link {
	l.Extra = cloneRawMap(l.Extra)
	return l
}

func (m *Metadata) clone() *Metadata {
	if m == nil {
		return nil
	}
	c := *m
	if m.Vendor != nil {
		v := *m.Vendor
		v.Extra = cloneRawMap(v.Extra)
		c.Vendor = &v
	}
	c.Model = bytes.Clone(m.Model)
	c.Extra = cloneRawMap(m.Extra)
	return &c
}

func (c Capability) clone() Capability {
	c.Examples = slices.Clone(c.Examples)
	c.Extra = cloneRawMap(c.Extra)
	return c
}

func cloneForms(fs []Form) []Form { return cloneSlice(fs, Form.clone) }

func cloneSlice[T any](s []T, clone func(T) T) []T {
	if s == nil {
		return nil
	}
	c := make([]T, len(s))
	for i, v := range s {
		c[i] = clone(v)
	}
	return c
}

func cloneMap[T any](m map[string]T, clone func(T) T) map[string]T {
	if m == nil {
		return nil
	}
	c := make(map[string]T, len(m))
	for k, v := range m {
		c[k] = clone(v)
	}
	return c
}

func cloneRawMap(m map[string]json.RawMessage) map[string]json.RawMessage {
	return cloneMap(m, func(r json.RawMessage) json.RawMessage { return bytes.Clone(r) })
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Decoding. Each object is split into its members; the typed ones are
// taken out and checked for shape, the rest become Extra. Errors carry the
// JSON pointer of the offending member.

// UnmarshalJSON parses a TD (see ParseTD, which also bounds the size).
func (td *TD) UnmarshalJSON(data []byte) error {
	r, err := newTDReader(data, "")
	if err != nil {
		return err
	}
	*td = TD{}
	r.raw(memberContext, &td.Context)
	r.strings(memberType, &td.Types)
	r.string(memberID, &td.ID)
	r.string(memberTitle, &td.Title)
	r.string(memberDescription, &td.Description)
	td.Properties = readMap(r, memberProperties, decodeProperty)
	td.Actions = readMap(r, memberActions, decodeAction)
	td.Events = readMap(r, memberEvents, decodeEvent)
	td.Forms = readList(r, memberForms, decodeForm)
	td.Links = readList(r, memberLinks, decodeLink)
	r.strings(memberSecurity, &td.Security)
	td.SecurityDefinitions = readMap(r, memberSecurityDefinitions, decodeRaw)
	if raw, ok := r.take(memberLMOSMetadata); ok && r.err == nil {
		td.Metadata, r.err = decodeMetadata(raw, r.ptr+"/"+memberLMOSMetadata)
	}
	td.Capabilities = readList(r, memberLMOSCapabilities, decodeCapability)
	r.stringList(memberLMOSGroups, &td.Groups)
	r.uint(memberLMOSSeq, &td.Seq)
	r.raw(memberProof, &td.Proof)
	td.Extra, td.shape = r.rest()
	return r.err
}

// UnmarshalJSON parses a property affordance.
func (p *PropertyAffordance) UnmarshalJSON(data []byte) error {
	v, err := decodeProperty(data, "")
	if err == nil {
		*p = *v
	}
	return err
}

// UnmarshalJSON parses an action affordance.
func (a *ActionAffordance) UnmarshalJSON(data []byte) error {
	v, err := decodeAction(data, "")
	if err == nil {
		*a = *v
	}
	return err
}

// UnmarshalJSON parses an event affordance.
func (e *EventAffordance) UnmarshalJSON(data []byte) error {
	v, err := decodeEvent(data, "")
	if err == nil {
		*e = *v
	}
	return err
}

// UnmarshalJSON parses a form.
func (f *Form) UnmarshalJSON(data []byte) error {
	v, err := decodeForm(data, "")
	if err == nil {
		*f = v
	}
	return err
}

// UnmarshalJSON parses a link.
func (l *Link) UnmarshalJSON(data []byte) error {
	v, err := decodeLink(data, "")
	if err == nil {
		*l = v
	}
	return err
}

// UnmarshalJSON parses lmos:metadata.
func (m *Metadata) UnmarshalJSON(data []byte) error {
	v, err := decodeMetadata(data, "")
	if err == nil {
		*m = *v
	}
	return err
}

// UnmarshalJSON parses lmos:vendor.
func (v *Vendor) UnmarshalJSON(data []byte) error {
	x, err := decodeVendor(data, "")
	if err == nil {
		*v = *x
	}
	return err
}

// UnmarshalJSON parses an lmos:capabilities element.
func (c *Capability) UnmarshalJSON(data []byte) error {
	v, err := decodeCapability(data, "")
	if err == nil {
		*c = v
	}
	return err
}

func decodeProperty(data []byte, ptr string) (*PropertyAffordance, error) {
	r, err := newTDReader(data, ptr)
	if err != nil {
		return nil, err
	}
	p := new(PropertyAffordance)
	r.string(memberTitle, &p.Title)
	r.string(memberDescription, &p.Description)
	p.Forms = readList(r, memberForms, decodeForm)
	r.bool(memberReadOnly, &p.ReadOnly)
	r.bool(memberWriteOnly, &p.WriteOnly)
	r.bool(memberObservable, &p.Observable)
	p.Extra, p.shape = r.rest()
	return p, r.err
}

func decodeAction(data []byte, ptr string) (*ActionAffordance, error) {
	r, err := newTDReader(data, ptr)
	if err != nil {
		return nil, err
	}
	a := new(ActionAffordance)
	r.string(memberTitle, &a.Title)
	r.string(memberDescription, &a.Description)
	a.Forms = readList(r, memberForms, decodeForm)
	r.raw(memberInput, &a.Input)
	r.raw(memberOutput, &a.Output)
	r.bool(memberSafe, &a.Safe)
	r.bool(memberIdempotent, &a.Idempotent)
	r.bool(memberSynchronous, &a.Synchronous)
	a.Extra, a.shape = r.rest()
	return a, r.err
}

func decodeEvent(data []byte, ptr string) (*EventAffordance, error) {
	r, err := newTDReader(data, ptr)
	if err != nil {
		return nil, err
	}
	e := new(EventAffordance)
	r.string(memberTitle, &e.Title)
	r.string(memberDescription, &e.Description)
	e.Forms = readList(r, memberForms, decodeForm)
	r.raw(memberData, &e.Data)
	e.Extra, e.shape = r.rest()
	return e, r.err
}

func decodeForm(data []byte, ptr string) (Form, error) {
	var f Form
	r, err := newTDReader(data, ptr)
	if err != nil {
		return f, err
	}
	r.string(memberHref, &f.Href)
	r.strings(memberOp, &f.Op)
	r.string(memberContentType, &f.ContentType)
	r.string(memberSubprotocol, &f.Subprotocol)
	r.strings(memberSecurity, &f.Security)
	f.Extra, f.shape = r.rest()
	return f, r.err
}

func decodeLink(data []byte, ptr string) (Link, error) {
	var l Link
	r, err := newTDReader(data, ptr)
	if err != nil {
		return l, err
	}
	r.string(memberHref, &l.Href)
	r.string(memberRel, &l.Rel)
	r.string(memberLinkType, &l.Type)
	l.Extra, l.shape = r.rest()
	return l, r.err
}

func decodeMetadata(data []byte, ptr string) (*Metadata, error) {
	r, err := newTDReader(data, ptr)
	if err != nil {
		return nil, err
	}
	m := new(Metadata)
	if raw, ok := r.take(memberLMOSVendor); ok {
		m.Vendor, r.err = decodeVendor(raw, ptr+"/"+memberLMOSVendor)
	}
	r.raw(memberLMOSModel, &m.Model)
	m.Extra, _ = r.rest() // Metadata has no string members of its own
	return m, r.err
}

func decodeVendor(data []byte, ptr string) (*Vendor, error) {
	r, err := newTDReader(data, ptr)
	if err != nil {
		return nil, err
	}
	v := new(Vendor)
	r.string(memberLMOSName, &v.Name)
	r.string(memberLMOSURL, &v.URL)
	v.Extra, v.shape = r.rest()
	return v, r.err
}

func decodeCapability(data []byte, ptr string) (Capability, error) {
	var c Capability
	r, err := newTDReader(data, ptr)
	if err != nil {
		return c, err
	}
	r.string(memberLMOSCapabilityID, &c.ID)
	r.string(memberLMOSVersion, &c.Version)
	r.string(memberLMOSDescription, &c.Description)
	r.stringList(memberLMOSExamples, &c.Examples)
	c.Extra, c.shape = r.rest()
	return c, r.err
}

func decodeRaw(data []byte, _ string) (json.RawMessage, error) { return data, nil }

// tdReader takes the members of one JSON object apart. It keeps the first
// error; once it has one, further reads do nothing.
type tdReader struct {
	ptr     string // JSON pointer of the object
	members map[string]json.RawMessage
	shape   tdShape
	err     error
}

func newTDReader(data []byte, ptr string) (*tdReader, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, shapeError(ptr, "want an object, got "+jsonKind(data))
		}
		return nil, err
	}
	if members == nil { // JSON null
		return nil, shapeError(ptr, "want an object, got null")
	}
	return &tdReader{ptr: ptr, members: members}, nil
}

// take removes a member and returns its raw value.
func (r *tdReader) take(key string) (json.RawMessage, bool) {
	raw, ok := r.members[key]
	delete(r.members, key)
	return raw, ok
}

// fail records a shape error at a member, or at an item of it if index is
// given.
func (r *tdReader) fail(key, msg string, index ...int) {
	if r.err != nil {
		return
	}
	ptr := r.ptr + "/" + escapePointer(key)
	for _, i := range index {
		ptr += fmt.Sprintf("/%d", i)
	}
	r.err = shapeError(ptr, msg)
}

func (r *tdReader) string(key string, dst *string) {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil || isNull(raw) {
		r.fail(key, "want a string, got "+jsonKind(raw))
		return
	}
	if *dst == "" {
		r.mark(&r.shape.present, key)
	}
}

func (r *tdReader) bool(key string, dst **bool) {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || isNull(raw) {
		r.fail(key, "want a boolean, got "+jsonKind(raw))
		return
	}
	*dst = &b
}

// strings reads a member that is a string or an array of strings.
func (r *tdReader) strings(key string, dst *[]string) {
	raw, ok := r.members[key]
	if !ok || r.err != nil {
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && !isNull(raw) {
		delete(r.members, key)
		*dst = []string{s}
		return
	}
	if jsonKind(raw) != "an array" {
		r.fail(key, "want a string or an array of strings, got "+jsonKind(raw))
		return
	}
	r.stringList(key, dst)
	r.mark(&r.shape.array, key)
}

// stringList reads a member that is an array of strings.
func (r *tdReader) stringList(key string, dst *[]string) {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		r.fail(key, "want an array of strings, got "+jsonKind(raw))
		return
	}
	out := make([]string, len(list))
	for i, item := range list {
		if json.Unmarshal(item, &out[i]) != nil || isNull(item) {
			r.fail(key, "want a string, got "+jsonKind(item), i)
			return
		}
	}
	*dst = out
}

func (r *tdReader) uint(key string, dst *uint64) {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return
	}
	n, err := parseUint(raw)
	if err != nil {
		r.fail(key, err.Error())
		return
	}
	*dst = n
	if n == 0 {
		r.mark(&r.shape.present, key)
	}
}

func (r *tdReader) raw(key string, dst *json.RawMessage) {
	if raw, ok := r.take(key); ok {
		*dst = raw
	}
}

func (r *tdReader) mark(set *map[string]bool, key string) {
	if *set == nil {
		*set = make(map[string]bool)
	}
	(*set)[key] = true
}

// rest returns the members not taken (nil if none) and the shape recorded.
func (r *tdReader) rest() (map[string]json.RawMessage, tdShape) {
	if len(r.members) == 0 {
		return nil, r.shape
	}
	return r.members, r.shape
}

// readMap reads a member that is an object whose values decode with dec.
func readMap[T any](r *tdReader, key string, dec func([]byte, string) (T, error)) map[string]T {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || members == nil {
		r.fail(key, "want an object, got "+jsonKind(raw))
		return nil
	}
	out := make(map[string]T, len(members))
	base := r.ptr + "/" + escapePointer(key) + "/"
	for _, name := range slices.Sorted(maps.Keys(members)) {
		v, err := dec(members[name], base+escapePointer(name))
		if err != nil {
			r.err = err
			return nil
		}
		out[name] = v
	}
	return out
}

// readList reads a member that is an array whose elements decode with dec.
func readList[T any](r *tdReader, key string, dec func([]byte, string) (T, error)) []T {
	raw, ok := r.take(key)
	if !ok || r.err != nil {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		r.fail(key, "want an array, got "+jsonKind(raw))
		return nil
	}
	out := make([]T, len(items))
	base := r.ptr + "/" + escapePointer(key) + "/"
	for i, item := range items {
		v, err := dec(item, fmt.Sprintf("%s%d", base, i))
		if err != nil {
			r.err = err
			return nil
		}
		out[i] = v
	}
	return out
}

// parseUint reads a JSON number that is a non-negative integer that fits in
// 64 bits. Like JSON Schema, it accepts integral values written with a
// fraction or exponent (1.0, 1e3).
func parseUint(raw json.RawMessage) (uint64, error) {
	var num json.Number
	if err := json.Unmarshal(raw, &num); err != nil || jsonKind(raw) != "a number" {
		return 0, fmt.Errorf("want a non-negative integer, got %s", jsonKind(raw))
	}
	return parseUintNumber(num)
}

func parseUintNumber(num json.Number) (uint64, error) {
	r, ok := new(big.Rat).SetString(num.String())
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, fmt.Errorf("want a non-negative integer, got %s", num)
	}
	if !r.Num().IsUint64() {
		return 0, fmt.Errorf("want an integer of at most %d, got %s", uint64(math.MaxUint64), num)
	}
	return r.Num().Uint64(), nil
}

func shapeError(ptr, msg string) error { return ValidationError{Pointer: ptr, Message: msg} }

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonKind names the JSON type of a valid JSON value, for error messages.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// Encoding. Members are written in a fixed order: the typed ones first, in
// the order a reader expects (@context, @type, id, title, …), then Extra in
// key order, then proof. A typed member that is set wins over an Extra
// member of the same name.

// MarshalJSON writes the TD as a compact JSON object.
func (td *TD) MarshalJSON() ([]byte, error) {
	w := newTDWriter(td.shape)
	w.raw(memberContext, td.Context)
	w.strings(memberType, td.Types)
	w.string(memberID, td.ID)
	w.string(memberTitle, td.Title)
	w.string(memberDescription, td.Description)
	w.object(memberLMOSMetadata, td.Metadata, td.Metadata == nil)
	w.object(memberLMOSCapabilities, td.Capabilities, td.Capabilities == nil)
	w.object(memberLMOSGroups, td.Groups, td.Groups == nil)
	w.uint(memberLMOSSeq, td.Seq)
	w.object(memberSecurityDefinitions, td.SecurityDefinitions, td.SecurityDefinitions == nil)
	w.strings(memberSecurity, td.Security)
	w.object(memberProperties, td.Properties, td.Properties == nil)
	w.object(memberActions, td.Actions, td.Actions == nil)
	w.object(memberEvents, td.Events, td.Events == nil)
	w.object(memberForms, td.Forms, td.Forms == nil)
	w.object(memberLinks, td.Links, td.Links == nil)
	w.extra(td.Extra)
	w.raw(memberProof, td.Proof)
	return w.finish()
}

// MarshalJSON writes the property affordance.
func (p *PropertyAffordance) MarshalJSON() ([]byte, error) {
	w := newTDWriter(p.shape)
	w.string(memberTitle, p.Title)
	w.string(memberDescription, p.Description)
	w.bool(memberReadOnly, p.ReadOnly)
	w.bool(memberWriteOnly, p.WriteOnly)
	w.bool(memberObservable, p.Observable)
	w.extra(p.Extra)
	w.object(memberForms, p.Forms, p.Forms == nil)
	return w.finish()
}

// MarshalJSON writes the action affordance.
func (a *ActionAffordance) MarshalJSON() ([]byte, error) {
	w := newTDWriter(a.shape)
	w.string(memberTitle, a.Title)
	w.string(memberDescription, a.Description)
	w.bool(memberSafe, a.Safe)
	w.bool(memberIdempotent, a.Idempotent)
	w.bool(memberSynchronous, a.Synchronous)
	w.raw(memberInput, a.Input)
	w.raw(memberOutput, a.Output)
	w.extra(a.Extra)
	w.object(memberForms, a.Forms, a.Forms == nil)
	return w.finish()
}

// MarshalJSON writes the event affordance.
func (e *EventAffordance) MarshalJSON() ([]byte, error) {
	w := newTDWriter(e.shape)
	w.string(memberTitle, e.Title)
	w.string(memberDescription, e.Description)
	w.raw(memberData, e.Data)
	w.extra(e.Extra)
	w.object(memberForms, e.Forms, e.Forms == nil)
	return w.finish()
}

// MarshalJSON writes the form.
func (f Form) MarshalJSON() ([]byte, error) {
	w := newTDWriter(f.shape)
	w.string(memberHref, f.Href)
	w.strings(memberOp, f.Op)
	w.string(memberContentType, f.ContentType)
	w.string(memberSubprotocol, f.Subprotocol)
	w.strings(memberSecurity, f.Security)
	w.extra(f.Extra)
	return w.finish()
}

// MarshalJSON writes the link.
func (l Link) MarshalJSON() ([]byte, error) {
	w := newTDWriter(l.shape)
	w.string(memberRel, l.Rel)
	w.string(memberHref, l.Href)
	w.string(memberLinkType, l.Type)
	w.extra(l.Extra)
	return w.finish()
}

// MarshalJSON writes lmos:metadata.
func (m *Metadata) MarshalJSON() ([]byte, error) {
	w := newTDWriter(tdShape{})
	w.object(memberLMOSVendor, m.Vendor, m.Vendor == nil)
	w.raw(memberLMOSModel, m.Model)
	w.extra(m.Extra)
	return w.finish()
}

// MarshalJSON writes lmos:vendor.
func (v *Vendor) MarshalJSON() ([]byte, error) {
	w := newTDWriter(v.shape)
	w.string(memberLMOSName, v.Name)
	w.string(memberLMOSURL, v.URL)
	w.extra(v.Extra)
	return w.finish()
}

// MarshalJSON writes an lmos:capabilities element.
func (c Capability) MarshalJSON() ([]byte, error) {
	w := newTDWriter(c.shape)
	w.string(memberLMOSCapabilityID, c.ID)
	w.string(memberLMOSVersion, c.Version)
	w.string(memberLMOSDescription, c.Description)
	w.object(memberLMOSExamples, c.Examples, c.Examples == nil)
	w.extra(c.Extra)
	return w.finish()
}

// tdWriter puts one JSON object together. Every typed member claims its
// name, written or not, so that an Extra entry of the same name is dropped:
// the typed field is the one source of truth. It keeps the first error.
type tdWriter struct {
	shape   tdShape
	members []tdMember
	claimed map[string]bool
	err     error
}

type tdMember struct {
	key   string
	value json.RawMessage
	extra bool
}

func newTDWriter(shape tdShape) *tdWriter {
	return &tdWriter{shape: shape, claimed: make(map[string]bool)}
}

// raw writes a member whose value is JSON text; nil means absent.
func (w *tdWriter) raw(key string, value json.RawMessage) {
	w.claimed[key] = true
	if value != nil {
		w.members = append(w.members, tdMember{key: key, value: value})
	}
}

// value writes a member whose value is marshalled from v.
func (w *tdWriter) value(key string, v any) {
	b, err := marshalNoEscape(v)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("%s: %w", key, err)
	}
	w.raw(key, b)
}

func (w *tdWriter) string(key, s string) {
	if s != "" || w.shape.present[key] {
		w.raw(key, marshalString(s))
	}
	w.claimed[key] = true
}

func (w *tdWriter) bool(key string, b *bool) {
	if b != nil {
		w.value(key, *b)
	}
	w.claimed[key] = true
}

func (w *tdWriter) uint(key string, n uint64) {
	if n != 0 || w.shape.present[key] {
		w.value(key, n)
	}
	w.claimed[key] = true
}

// strings writes a string-or-array member: a single string as a string
// unless it was parsed from an array.
func (w *tdWriter) strings(key string, list []string) {
	switch {
	case list == nil:
		w.claimed[key] = true
	case len(list) == 1 && !w.shape.array[key]:
		w.value(key, list[0])
	default:
		w.value(key, list)
	}
}

// object writes a member marshalled from v unless isNil; maps, slices and
// pointers are passed with their nil test so that an empty but present
// value ({} or []) is kept.
func (w *tdWriter) object(key string, v any, isNil bool) {
	if isNil {
		w.claimed[key] = true
		return
	}
	w.value(key, v)
}

// extra writes the Extra members, in key order.
func (w *tdWriter) extra(m map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.members = append(w.members, tdMember{key: k, value: m[k], extra: true})
	}
}

func (w *tdWriter) finish() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	for _, m := range w.members {
		if m.extra && w.claimed[m.key] {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		buf.Write(marshalString(m.key))
		buf.WriteByte(':')
		if err := json.Compact(&buf, m.value); err != nil {
			return nil, fmt.Errorf("%s: %w", m.key, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func marshalString(s string) []byte {
	b, _ := marshalNoEscape(s) // a string always marshals
	return b
}
