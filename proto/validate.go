package proto

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/Masterminds/semver/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxTDSize is the largest TD document, in bytes, that ParseTD and
// ValidateTD accept. Real TDs are a few KiB (the largest of the W3C TD
// conformance corpus, mqtt-experimental.json, is 10463 bytes); 64 KiB
// leaves six times that for large data schemas while bounding what a peer
// can make every node parse and hold (docs/api.md, "Quotas").
const MaxTDSize = 64 << 10

// MaxTDDepth is the deepest nesting of objects and arrays ValidateTD
// accepts. A TD nests a data schema two levels per schema (properties →
// name → schema), so 64 allows about thirty nested schemas.
const MaxTDDepth = 64

// MaxIDLength bounds a Thing id, in bytes, in a TD and in a tombstone.
// Real ids (URNs, URLs, did:key) are well under 200 bytes; 2 KiB keeps room
// for long URLs while keeping the DHT keys, index entries, log lines and
// URL paths an id travels in small.
const MaxIDLength = 2048

// ValidationError is one problem found in a TD.
type ValidationError struct {
	// Pointer is the RFC 6901 JSON pointer of the offending member ("" is
	// the whole document).
	Pointer string
	// Message says what is wrong.
	Message string
}

func (e ValidationError) Error() string {
	if e.Pointer == "" {
		return "(root): " + e.Message
	}
	return e.Pointer + ": " + e.Message
}

func tooLarge(n int) ValidationError {
	return ValidationError{Message: fmt.Sprintf("document is %d bytes, more than the %d allowed", n, MaxTDSize)}
}

// ValidationErrors is the list of problems ValidateTD found, ordered by
// pointer. It is never empty when returned as an error.
type ValidationErrors []ValidationError

func (es ValidationErrors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return fmt.Sprintf("%d problems: %s", len(es), strings.Join(msgs, "; "))
}

// ValidateTD checks a Thing Description document. It returns nil or a
// ValidationErrors listing every problem found:
//
//   - the document is a JSON object of at most MaxTDSize bytes, nested at
//     most MaxTDDepth deep, without duplicate member names;
//   - every string (member names too) is valid UTF-8 with no lone UTF-16
//     surrogate escape ("\ud800"): encoding/json would silently rewrite
//     both to U+FFFD, so the content a node keeps and signs would differ
//     from what was sent;
//   - every number fits a 64-bit float (1e400 does not);
//   - the id, if any, is at most MaxIDLength bytes;
//   - it is valid against the official TD 1.1 JSON Schema;
//   - every name in "security" (top level and in forms) and in combo
//     schemes is defined in "securityDefinitions";
//   - at most one link has rel "type";
//   - LMOS: a document that uses an lmos: term (a top-level member, or a
//     type in @type at the top level or of an affordance) binds the prefix
//     "lmos" to ContextLMOS in @context; lmos:capabilities is an array of
//     objects with a non-empty string lmos:id, a semantic version as
//     lmos:version, a string lmos:description and an array of strings
//     lmos:examples (all but lmos:id optional); lmos:groups is an array of
//     non-empty strings; lmos:seq a non-negative integer; lmos:metadata an
//     object whose lmos:vendor is an object with string lmos:name and
//     lmos:url.
//
// A document ValidateTD accepts parses with ParseTD. ValidateTD does not
// fetch anything: Thing Models named by links are not resolved.
// It is safe for concurrent use.
func ValidateTD(data []byte) error {
	if len(data) > MaxTDSize {
		return ValidationErrors{tooLarge(len(data))}
	}
	errs, doc, ok := scanTD(data)
	if !ok {
		return errs
	}
	schema, err := tdSchema()
	if err != nil {
		return err
	}
	if err := schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return fmt.Errorf("proto: validate TD: %w", err)
		}
		errs = append(errs, schemaErrors(ve)...)
	}
	errs = append(errs, checkSecurityNames(doc)...)
	errs = append(errs, checkTypeLinks(doc)...)
	errs = append(errs, checkLMOS(doc)...)
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b ValidationError) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(errs)
}

// scanTD checks, token by token, that data is one JSON object nested at
// most MaxTDDepth deep, and reports duplicate member names (which
// encoding/json and the schema validator silently collapse). ok is false if
// the document cannot be validated further. It also returns the document
// as the schema validator reads it (jsonschema.UnmarshalJSON: objects as
// map[string]any, arrays as []any, numbers as json.Number; of duplicate
// members the last), built from the same tokens, so that data is decoded
// once.
func scanTD(data []byte) (errs ValidationErrors, doc map[string]any, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return syntaxErrors(err), nil, false
	}
	if tok != json.Delim('{') {
		return ValidationErrors{{Message: "a TD must be a JSON object, got " + tokenKind(tok)}}, nil, false
	}
	// Most TDs nest less than 8 deep: one allocation for the stack.
	s := tdScanner{stack: make([]*scanFrame, 0, 8)}
	doc = map[string]any{}
	s.stack = append(s.stack, &scanFrame{object: true, keys: map[string]bool{}, wantKey: true, obj: doc})
	for len(s.stack) > 0 {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return syntaxErrors(err), nil, false
		}
		top := s.stack[len(s.stack)-1]
		switch {
		case top.object && top.wantKey && tok == json.Delim('}'):
			s.stack = s.stack[:len(s.stack)-1]
			s.valueDone(top.obj)
		case top.object && top.wantKey:
			// The decoder only returns string keys here.
			s.key(top, tok.(string), data[start:dec.InputOffset()])
		case tok == json.Delim('{') || tok == json.Delim('['):
			if len(s.stack) >= MaxTDDepth {
				return append(s.errs, ValidationError{Pointer: s.pointer(), Message: fmt.Sprintf("nested more than %d levels deep", MaxTDDepth)}), nil, false
			}
			s.open(tok == json.Delim('{'))
		case tok == json.Delim(']'):
			s.stack = s.stack[:len(s.stack)-1]
			s.valueDone(top.arr)
		default:
			s.scalar(top, tok, data[start:dec.InputOffset()])
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return append(s.errs, ValidationError{Message: "invalid JSON: data after the TD object"}), nil, false
	}
	return s.errs, doc, true
}

// tdScanner is scanTD's state: the containers open around the current
// token (innermost last) and the problems found so far.
type tdScanner struct {
	stack []*scanFrame
	errs  ValidationErrors
}

// scanFrame is an object or array open in scanTD, with what has been
// decoded of it so far.
type scanFrame struct {
	object  bool
	keys    map[string]bool // member names seen (objects)
	wantKey bool            // the next token is a member name or '}'
	key     string          // the current member name (objects)
	index   int             // the current element's index (arrays)
	obj     map[string]any
	arr     []any
}

// pointer is the JSON pointer of the current value. It is built only for
// an error: building pointers for every token would cost more than the
// scan.
func (s *tdScanner) pointer() string {
	var b strings.Builder
	for _, f := range s.stack {
		b.WriteByte('/')
		if f.object {
			b.WriteString(escapePointer(f.key))
		} else {
			fmt.Fprint(&b, f.index)
		}
	}
	return b.String()
}

// checkString checks raw, the raw text of a string token (checkRawString),
// and reports what is wrong at the current pointer.
func (s *tdScanner) checkString(raw []byte) {
	if msg := checkRawString(raw); msg != "" {
		s.errs = append(s.errs, ValidationError{Pointer: s.pointer(), Message: msg})
	}
}

// key reads the member name key of the object top, raw its text: it
// becomes the current member, and a name the object already has is
// reported.
func (s *tdScanner) key(top *scanFrame, key string, raw []byte) {
	top.key, top.wantKey = key, false
	s.checkString(raw)
	if top.keys[key] {
		s.errs = append(s.errs, ValidationError{Pointer: s.pointer(), Message: fmt.Sprintf("duplicate member %q", key)})
	}
	top.keys[key] = true
}

// open pushes a new, empty object or array.
func (s *tdScanner) open(object bool) {
	f := &scanFrame{object: object, wantKey: true}
	if object {
		f.keys, f.obj = map[string]bool{}, map[string]any{}
	} else {
		f.arr = []any{}
	}
	s.stack = append(s.stack, f)
}

// scalar reads a string, number, boolean or null token, raw its text,
// into the container top: strings must be well-formed (the top-level id
// also short enough), numbers must fit a 64-bit float.
func (s *tdScanner) scalar(top *scanFrame, tok json.Token, raw []byte) {
	switch v := tok.(type) {
	case string:
		s.checkString(raw)
		if len(s.stack) == 1 && top.key == memberID && len(v) > MaxIDLength {
			s.errs = append(s.errs, ValidationError{Pointer: "/" + memberID, Message: idTooLong(len(v))})
		}
	case json.Number:
		if _, err := strconv.ParseFloat(v.String(), 64); err != nil {
			s.errs = append(s.errs, ValidationError{Pointer: s.pointer(), Message: fmt.Sprintf("number %s is out of range of a 64-bit float", v)})
		}
	}
	s.valueDone(tok)
}

// valueDone puts v, a value just read, in the container on top.
func (s *tdScanner) valueDone(v any) {
	if len(s.stack) == 0 {
		return
	}
	if top := s.stack[len(s.stack)-1]; top.object {
		top.obj[top.key] = v
		top.wantKey = true
	} else {
		top.arr = append(top.arr, v)
		top.index++
	}
}

// syntaxErrors words a decoder error as the one problem of a document that
// is not JSON.
func syntaxErrors(err error) ValidationErrors {
	msg := "invalid JSON: " + err.Error()
	if se, isSyntax := errors.AsType[*json.SyntaxError](err); isSyntax {
		msg = fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	} else if err == io.ErrUnexpectedEOF || err == io.EOF {
		msg = "invalid JSON: unexpected end of input"
	}
	return ValidationErrors{{Message: msg}}
}

// idTooLong says that an id of n bytes exceeds MaxIDLength.
func idTooLong(n int) string {
	return fmt.Sprintf("id is %d bytes, more than the %d allowed", n, MaxIDLength)
}

// CheckJSONText checks the raw text of any JSON document for what
// encoding/json would silently rewrite to U+FFFD: invalid UTF-8 and lone
// UTF-16 surrogate escapes. It returns what is wrong, or "". ValidateTD
// makes this check (naming the member); CheckJSONText is for JSON that is
// not a TD, such as a merge patch.
func CheckJSONText(data []byte) string { return checkRawString(data) }

// checkRawString checks the raw JSON text of one string token (possibly
// preceded by the separators before it, which are ASCII): it must be valid
// UTF-8 and every \u escape of a UTF-16 surrogate must be half of a pair.
// It returns what is wrong, or "".
func checkRawString(raw []byte) string {
	if !utf8.Valid(raw) {
		return "string is not valid UTF-8"
	}
	// hex reads the 4 hex digits of the escape "\uXXXX" at raw[i:].
	hex := func(i int) (rune, bool) {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		if !ok { // a two-byte escape such as \\ or \n
			i++
			continue
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // high half: a low half must follow
			if low, ok := hex(i + 6); ok && low >= 0xdc00 && low <= 0xdfff {
				i += 11
				continue
			}
			return fmt.Sprintf(`lone surrogate \u%04x: not a character`, r)
		case utf16.IsSurrogate(r):
			return fmt.Sprintf(`lone surrogate \u%04x: not a character`, r)
		}
		i += 5
	}
	return ""
}

func tokenKind(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

// The official TD 1.1 JSON Schema, compiled once on first use.

//go:embed schema/td-json-schema-validation.json
var tdSchemaJSON []byte

// tdSchemaURL is the schema's own $id.
const tdSchemaURL = "https://raw.githubusercontent.com/w3c/wot-thing-description/main/validation/td-json-schema-validation.json"

var tdSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tdSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("proto: TD schema: %w", err)
	}
	c := jsonschema.NewCompiler() // loads nothing from the network
	if err := c.AddResource(tdSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("proto: TD schema: %w", err)
	}
	s, err := c.Compile(tdSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("proto: TD schema: %w", err)
	}
	return s, nil
})

// schemaErrors flattens the validator's error tree to its leaf causes and
// words them.
//
// The TD schema uses oneOf/anyOf to say "a string or an array", "one of
// these security schemes", …; when no branch matches, the validator reports
// every branch. Reporting them all buries the real problem, so for a union
// the branches are narrowed down:
//
//  1. a branch that fails only because the value has another JSON type was
//     not meant (if all do, the types are merged: "want string or array");
//  2. of the rest, a branch that fails with an enum, const or pattern
//     mismatch was ruled out by a discriminator (e.g. "scheme"); if some
//     branches were not ruled out, they are the ones reported;
//  3. if all were ruled out, the mismatches are reported, merged per member
//     into one "want one of …".
func schemaErrors(ve *jsonschema.ValidationError) []ValidationError {
	leaves := schemaLeaves(ve)
	var out []ValidationError
	mismatches := map[string][]*jsonschema.ValidationError{}
	var order []string
	for _, l := range leaves {
		ptr := instancePointer(l.InstanceLocation)
		if r, ok := l.ErrorKind.(*kind.Required); ok {
			// The pointer of what is missing, as WoT Discovery's test
			// suite wants it ("/title"), not of the object that lacks it.
			for _, m := range r.Missing {
				out = append(out, ValidationError{Pointer: ptr + "/" + escapePointer(m), Message: fmt.Sprintf("missing required member %q", m)})
			}
			continue
		}
		if isValueMismatch(l) {
			if mismatches[ptr] == nil {
				order = append(order, ptr)
			}
			mismatches[ptr] = append(mismatches[ptr], l)
			continue
		}
		out = append(out, ValidationError{Pointer: ptr, Message: schemaMessage(l)})
	}
	for _, ptr := range order {
		out = append(out, ValidationError{Pointer: ptr, Message: mismatchMessage(mismatches[ptr])})
	}
	return out
}

func schemaLeaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if len(e.Causes) > 0 {
			return unionLeaves(e)
		}
	}
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, schemaLeaves(c)...)
	}
	return out
}

func unionLeaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var fit [][]*jsonschema.ValidationError
	typeMismatch := &kind.Type{}
	for _, c := range e.Causes {
		branch := schemaLeaves(c)
		if t, only := onlyTypeMismatch(branch, e.InstanceLocation); only {
			typeMismatch.Got = t.Got
			typeMismatch.Want = append(typeMismatch.Want, t.Want...)
			continue
		}
		fit = append(fit, branch)
	}
	switch len(fit) {
	case 0:
		slices.Sort(typeMismatch.Want)
		typeMismatch.Want = slices.Compact(typeMismatch.Want)
		return []*jsonschema.ValidationError{{InstanceLocation: e.InstanceLocation, ErrorKind: typeMismatch}}
	case 1:
		return fit[0]
	}
	var meant, ruledOut []*jsonschema.ValidationError
	for _, branch := range fit {
		if !slices.ContainsFunc(branch, isValueMismatch) {
			meant = append(meant, branch...)
			continue
		}
		for _, l := range branch {
			if isValueMismatch(l) {
				ruledOut = append(ruledOut, l)
			}
		}
	}
	if len(meant) > 0 {
		return meant
	}
	return ruledOut
}

// onlyTypeMismatch reports whether a branch failed only because the value
// at loc has another JSON type, and returns the mismatch, merged.
func onlyTypeMismatch(branch []*jsonschema.ValidationError, loc []string) (*kind.Type, bool) {
	merged := &kind.Type{}
	for _, l := range branch {
		t, ok := l.ErrorKind.(*kind.Type)
		if !ok || !slices.Equal(l.InstanceLocation, loc) {
			return nil, false
		}
		merged.Got = t.Got
		merged.Want = append(merged.Want, t.Want...)
	}
	return merged, len(branch) > 0
}

func isValueMismatch(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.Enum, *kind.Const, *kind.Pattern:
		return true
	}
	return false
}

var schemaPrinter = message.NewPrinter(language.English)

func schemaMessage(e *jsonschema.ValidationError) string {
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return fmt.Sprintf("wrong type: want %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("want at least %s, got %d", plural(k.Want, "item"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("want at most %s, got %d", plural(k.Want, "item"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("want at least %s, got %d", plural(k.Want, "member"), k.Got)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal, want unique items", k.Duplicates[0], k.Duplicates[1])
	case *kind.AdditionalProperties:
		return "members not allowed here: " + quoteList(k.Properties)
	case *kind.Format:
		return fmt.Sprintf("%s is not a valid %s: %v", displayJSON(k.Got), k.Want, k.Err)
	case *kind.Not, *kind.FalseSchema:
		return "value not allowed here"
	}
	return e.ErrorKind.LocalizedString(schemaPrinter)
}

// mismatchMessage words the enum, const and pattern failures at one member
// as one "got X, want one of …".
func mismatchMessage(ls []*jsonschema.ValidationError) string {
	var got any
	var values, patterns []string
	for _, l := range ls {
		switch k := l.ErrorKind.(type) {
		case *kind.Enum:
			got = k.Got
			for _, v := range k.Want {
				values = append(values, displayJSON(v))
			}
		case *kind.Const:
			got = k.Got
			values = append(values, displayJSON(k.Want))
		case *kind.Pattern:
			got = k.Got
			patterns = append(patterns, fmt.Sprintf("a string matching %q", k.Want))
		}
	}
	want := slices.Concat(dedupe(values), dedupe(patterns))
	if len(want) == 1 {
		return fmt.Sprintf("got %s, want %s", displayJSON(got), want[0])
	}
	return fmt.Sprintf("got %s, want one of %s or %s", displayJSON(got),
		strings.Join(want[:len(want)-1], ", "), want[len(want)-1])
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// dedupe removes repeated strings, keeping the first of each.
func dedupe(s []string) []string {
	seen := map[string]bool{}
	return slices.DeleteFunc(s, func(v string) bool {
		dup := seen[v]
		seen[v] = true
		return dup
	})
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// displayJSON renders a decoded JSON value for a message, shortened.
func displayJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > 64 {
		return string(r[:60]) + "…"
	}
	return string(b)
}

func instancePointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + escapePointer(t))
	}
	return b.String()
}

// Checks the schema cannot make. They work on the decoded document and
// skip what is malformed: the schema reports that.

// affordanceKinds are the TD members that hold interaction affordances.
var affordanceKinds = []string{memberProperties, memberActions, memberEvents}

// eachAffordance calls fn for every interaction affordance, in a stable
// order, with its JSON pointer.
func eachAffordance(doc map[string]any, fn func(ptr string, aff map[string]any)) {
	for _, k := range affordanceKinds {
		affs, _ := doc[k].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(affs)) {
			if aff, ok := affs[name].(map[string]any); ok {
				fn("/"+k+"/"+escapePointer(name), aff)
			}
		}
	}
}

// eachForm calls fn for every form, Thing-level and in affordances.
func eachForm(doc map[string]any, fn func(ptr string, form map[string]any)) {
	forms := func(ptr string, obj map[string]any) {
		list, _ := obj[memberForms].([]any)
		for i, f := range list {
			if form, ok := f.(map[string]any); ok {
				fn(fmt.Sprintf("%s/%s/%d", ptr, memberForms, i), form)
			}
		}
	}
	forms("", doc)
	eachAffordance(doc, forms)
}

// checkSecurityNames reports security scheme names that securityDefinitions
// does not define.
func checkSecurityNames(doc map[string]any) []ValidationError {
	defs, _ := doc[memberSecurityDefinitions].(map[string]any)
	var errs []ValidationError
	check := func(ptr string, v any) {
		names := []any{v}
		list, isList := v.([]any)
		if isList {
			names = list
		}
		for i, n := range names {
			name, ok := n.(string)
			if !ok {
				continue
			}
			if _, defined := defs[name]; !defined {
				p := ptr
				if isList {
					p = fmt.Sprintf("%s/%d", ptr, i)
				}
				errs = append(errs, ValidationError{Pointer: p,
					Message: fmt.Sprintf("security scheme %q is not defined in securityDefinitions", name)})
			}
		}
	}
	if v, ok := doc[memberSecurity]; ok {
		check("/"+memberSecurity, v)
	}
	eachForm(doc, func(ptr string, form map[string]any) {
		if v, ok := form[memberSecurity]; ok {
			check(ptr+"/"+memberSecurity, v)
		}
	})
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		def, _ := defs[name].(map[string]any)
		if def["scheme"] != "combo" {
			continue
		}
		for _, member := range []string{"oneOf", "allOf"} {
			if v, ok := def[member].([]any); ok {
				check("/"+memberSecurityDefinitions+"/"+escapePointer(name)+"/"+member, v)
			}
		}
	}
	return errs
}

// checkTypeLinks reports every link with rel "type" after the first: a TD
// is an instance of at most one Thing Model.
func checkTypeLinks(doc map[string]any) []ValidationError {
	links, _ := doc[memberLinks].([]any)
	first := -1
	var errs []ValidationError
	for i, l := range links {
		link, _ := l.(map[string]any)
		if link[memberRel] != "type" {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		errs = append(errs, ValidationError{Pointer: fmt.Sprintf("/%s/%d", memberLinks, i),
			Message: fmt.Sprintf(`more than one link with rel "type" (first at /%s/%d)`, memberLinks, first)})
	}
	return errs
}

const lmosTermPrefix = PrefixLMOS + ":"

// checkLMOS checks the LMOS context binding and the LMOS members.
func checkLMOS(doc map[string]any) []ValidationError {
	var c lmosCheck
	c.context(doc)
	if v, ok := doc[memberLMOSCapabilities]; ok {
		c.capabilities(v)
	}
	if v, ok := doc[memberLMOSGroups]; ok {
		c.errs = append(c.errs, checkStringArray("/"+memberLMOSGroups, v, true)...)
	}
	if v, ok := doc[memberLMOSSeq]; ok {
		c.seq(v)
	}
	if v, ok := doc[memberLMOSMetadata]; ok {
		c.metadata(v)
	}
	return c.errs
}

// lmosCheck collects the problems checkLMOS finds.
type lmosCheck struct {
	errs []ValidationError
}

// fail reports a problem at ptr.
func (c *lmosCheck) fail(ptr, format string, args ...any) {
	c.errs = append(c.errs, ValidationError{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

// context checks that a document using an lmos: term binds the prefix to
// ContextLMOS.
func (c *lmosCheck) context(doc map[string]any) {
	usePtr, term, used := firstLMOSTerm(doc)
	if !used {
		return
	}
	bindPtr, iri, bound := lmosBinding(doc[memberContext])
	switch {
	case !bound:
		c.fail(usePtr, `%q needs the LMOS context: bind %q to %q in @context`, term, PrefixLMOS, ContextLMOS)
	case iri != ContextLMOS:
		c.fail(bindPtr, `prefix %q is bound to %q, want %q`, PrefixLMOS, iri, ContextLMOS)
	}
}

// capabilities checks lmos:capabilities, v: an array of capability
// objects.
func (c *lmosCheck) capabilities(v any) {
	ptr := "/" + memberLMOSCapabilities
	caps, isList := v.([]any)
	if !isList {
		c.fail(ptr, "want an array of capability objects, got %s", kindOf(v))
	}
	for i, capability := range caps {
		c.capability(fmt.Sprintf("%s/%d", ptr, i), capability)
	}
}

// capability checks one capability, v at p: an object with a non-empty
// string lmos:id and optional lmos:version (a semantic version),
// lmos:description (a string) and lmos:examples (an array of strings).
func (c *lmosCheck) capability(p string, v any) {
	capability, isObj := v.(map[string]any)
	if !isObj {
		c.fail(p, "want a capability object, got %s", kindOf(v))
		return
	}
	id, present := capability[memberLMOSCapabilityID]
	if s, isStr := id.(string); !present {
		c.fail(p+"/"+memberLMOSCapabilityID, "missing required member %q", memberLMOSCapabilityID)
	} else if !isStr || s == "" {
		c.fail(p+"/"+memberLMOSCapabilityID, "want a non-empty string, got %s", displayJSON(id))
	}
	if v, ok := capability[memberLMOSVersion]; ok {
		s, isStr := v.(string)
		if !isStr {
			c.fail(p+"/"+memberLMOSVersion, "want a semantic version string, got %s", kindOf(v))
		} else if _, err := semver.StrictNewVersion(s); err != nil {
			c.fail(p+"/"+memberLMOSVersion, "%q is not a semantic version (like 1.2.0): %v", s, err)
		}
	}
	if v, ok := capability[memberLMOSDescription]; ok {
		if _, isStr := v.(string); !isStr {
			c.fail(p+"/"+memberLMOSDescription, "want a string, got %s", kindOf(v))
		}
	}
	if v, ok := capability[memberLMOSExamples]; ok {
		c.errs = append(c.errs, checkStringArray(p+"/"+memberLMOSExamples, v, false)...)
	}
}

// seq checks lmos:seq, v: a non-negative integer.
func (c *lmosCheck) seq(v any) {
	if num, isNum := v.(json.Number); !isNum {
		c.fail("/"+memberLMOSSeq, "want a non-negative integer, got %s", kindOf(v))
	} else if _, err := parseUintNumber(num); err != nil {
		c.fail("/"+memberLMOSSeq, "%v", err)
	}
}

// metadata checks lmos:metadata, v: an object whose lmos:vendor, if any,
// is an object with string lmos:name and lmos:url.
func (c *lmosCheck) metadata(v any) {
	ptr := "/" + memberLMOSMetadata
	meta, isObj := v.(map[string]any)
	if !isObj {
		c.fail(ptr, "want an object, got %s", kindOf(v))
	}
	v, ok := meta[memberLMOSVendor]
	if !ok {
		return
	}
	ptr += "/" + memberLMOSVendor
	vendor, isObj := v.(map[string]any)
	if !isObj {
		c.fail(ptr, "want an object, got %s", kindOf(v))
	}
	for _, m := range []string{memberLMOSName, memberLMOSURL} {
		if v, ok := vendor[m]; ok {
			if _, isStr := v.(string); !isStr {
				c.fail(ptr+"/"+m, "want a string, got %s", kindOf(v))
			}
		}
	}
}

// checkStringArray reports a value that is not an array of strings
// (non-empty ones if nonEmpty).
func checkStringArray(ptr string, v any, nonEmpty bool) []ValidationError {
	list, ok := v.([]any)
	if !ok {
		return []ValidationError{{Pointer: ptr, Message: "want an array of strings, got " + kindOf(v)}}
	}
	var errs []ValidationError
	for i, item := range list {
		s, isStr := item.(string)
		switch {
		case !isStr:
			errs = append(errs, ValidationError{Pointer: fmt.Sprintf("%s/%d", ptr, i), Message: "want a string, got " + kindOf(item)})
		case nonEmpty && s == "":
			errs = append(errs, ValidationError{Pointer: fmt.Sprintf("%s/%d", ptr, i), Message: "want a non-empty string"})
		}
	}
	return errs
}

// firstLMOSTerm finds the first use of an lmos: term: a type in @type (of
// the Thing, then of its affordances) or a top-level member name.
func firstLMOSTerm(doc map[string]any) (ptr, term string, found bool) {
	inTypes := func(base string, obj map[string]any) bool {
		switch t := obj[memberType].(type) {
		case string:
			if strings.HasPrefix(t, lmosTermPrefix) {
				ptr, term = base+"/"+memberType, t
				return true
			}
		case []any:
			for i, v := range t {
				if s, _ := v.(string); strings.HasPrefix(s, lmosTermPrefix) {
					ptr, term = fmt.Sprintf("%s/%s/%d", base, memberType, i), s
					return true
				}
			}
		}
		return false
	}
	if inTypes("", doc) {
		return ptr, term, true
	}
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if strings.HasPrefix(k, lmosTermPrefix) {
			return "/" + escapePointer(k), k, true
		}
	}
	eachAffordance(doc, func(p string, aff map[string]any) {
		if !found {
			found = inTypes(p, aff)
		}
	})
	return ptr, term, found
}

// lmosBinding finds the binding of the "lmos" prefix in @context.
func lmosBinding(ctx any) (ptr, iri string, found bool) {
	lookup := func(p string, v any) bool {
		obj, _ := v.(map[string]any)
		b, ok := obj[PrefixLMOS]
		if ok {
			ptr = p + "/" + PrefixLMOS
			iri, _ = b.(string)
		}
		return ok
	}
	base := "/" + memberContext
	if list, ok := ctx.([]any); ok {
		for i, v := range list {
			if lookup(fmt.Sprintf("%s/%d", base, i), v) {
				return ptr, iri, true
			}
		}
		return "", "", false
	}
	return ptr, iri, lookup(base, ctx)
}

// kindOf names the JSON type of a decoded JSON value.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}
