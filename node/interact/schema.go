package interact

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/lmosnode/lmosnode/proto"
)

// schemaCache holds compiled data schemas, keyed by the SHA-256 of the
// schema's JSON text. Keying by content compiles a schema once per TD
// version (a new version with a changed schema has new text, an unchanged
// affordance keeps its entry) and shares it between Things with the same
// schema. The cache is bounded: when full, it forgets the schema used least
// recently (golang-lru's LRU).
//
// It is safe for concurrent use; concurrent gets of one schema compile it
// once.
type schemaCache struct {
	entries *lru.Cache[[sha256.Size]byte, *compiled]
}

type compiled struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

// newSchemaCache returns a cache of at most size schemas (size > 0).
func newSchemaCache(size int) *schemaCache {
	entries, err := lru.New[[sha256.Size]byte, *compiled](size)
	if err != nil { // impossible: Validate refuses a negative size, withDefaults fills 0
		panic(err)
	}
	return &schemaCache{entries: entries}
}

// get returns the compiled schema of raw (a JSON Schema document).
func (c *schemaCache) get(raw []byte) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	e, ok := c.entries.Get(key)
	if !ok {
		e = &compiled{}
		if held, ok, _ := c.entries.PeekOrAdd(key, e); ok {
			e = held // another get added it meanwhile
		}
	}
	e.once.Do(func() { e.schema, e.err = compileSchema(raw) })
	return e.schema, e.err
}

// schemaURL names the schema being compiled; it is never fetched.
const schemaURL = "urn:lmosnode:data-schema"

// compileSchema compiles a TD data schema as JSON Schema draft 7, the draft
// the TD 1.1 data schema vocabulary follows. Members that are not JSON
// Schema keywords (forms, @type, unit, readOnly as an affordance flag, …)
// are annotations and ignored. The compiler loads nothing: a $ref to
// another document fails to compile.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("data schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("data schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("data schema: %w", err)
	}
	return s, nil
}

// noLoader refuses to load any schema: data schemas are self-contained and
// a node never fetches what a peer's TD points at.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("data schema: will not load %q: only self-contained schemas are supported", url)
}

var schemaPrinter = message.NewPrinter(language.English)

// validateValue checks v against the data schema raw (nil: no schema,
// anything goes). member names the message member v came from ("input",
// "data", "data/<property>"), for the problem's detail. A mismatch is a 400
// problem whose detail names each failing JSON pointer within v; a schema
// that does not compile is the Thing's fault, a 500.
func (c *schemaCache) validateValue(raw json.RawMessage, v proto.Value, member string) error {
	if len(raw) == 0 || !v.Present() {
		return nil
	}
	s, err := c.get(raw)
	if err != nil {
		return problem(http.StatusInternalServerError, TitleInternal, "the Thing's data schema for %s does not compile: %v", member, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.JSON()))
	if err != nil { // impossible: a Value is valid JSON
		return problem(http.StatusBadRequest, TitleInvalidInput, "%s: %v", member, err)
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return problem(http.StatusInternalServerError, TitleInternal, "validating %s: %v", member, err)
	}
	return problem(http.StatusBadRequest, TitleInvalidInput, "%s does not match the data schema: %s", member, describeMismatch(ve))
}

// describeMismatch words the leaf causes of a validation error, each with
// the JSON pointer (RFC 6901) of the failing value, sorted and without
// duplicates: `at "/city": got number, want string`.
func describeMismatch(ve *jsonschema.ValidationError) string {
	var msgs []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msg := fmt.Sprintf("at %q: %s", pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(schemaPrinter))
		if !seen[msg] {
			seen[msg] = true
			msgs = append(msgs, msg)
		}
	}
	walk(ve)
	sort.Strings(msgs)
	return strings.Join(msgs, "; ")
}

// pointer returns the RFC 6901 JSON pointer of a location ("" is the whole
// value).
func pointer(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
