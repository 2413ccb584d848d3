package aitp

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official schemas of the capabilities AITP defines (nearai/aitp,
// MIT, schemas/LICENSE), v1.0.0. aitp-01 and aitp-02 are OpenAPI
// documents whose message types are under components.schemas.
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// schemaRoots names the schema of a capability's messages inside its
// document ("" for the document itself).
var schemaRoots = map[string]string{
	"aitp-01-payments":     "#/components/schemas/PaymentProtocol",
	"aitp-02-decisions":    "#/components/schemas/DecisionProtocol",
	"aitp-03-data-request": "",
	"aitp-04-near-wallet":  "",
	"aitp-05-evm-wallet":   "",
}

// officialSchemas compiles the capability schemas once, by capability key
// (capabilityKey: id and major version).
var officialSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	out := map[string]*jsonschema.Schema{}
	for id, root := range schemaRoots {
		raw, err := schemaFiles.ReadFile("schemas/" + id + ".v1.0.0.json")
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("aitp: schema of %s: %w", id, err)
		}
		url := "https://aitp.dev/capabilities/" + id + "/v1.0.0/schema.json"
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("aitp: schema of %s: %w", id, err)
		}
		s, err := c.Compile(url + root)
		if err != nil {
			return nil, fmt.Errorf("aitp: schema of %s: %w", id, err)
		}
		out[capabilityKey(url)] = s
	}
	return out, nil
})

// noLoader loads nothing: the capability schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("aitp: will not load %q", url)
}

// checkMessage checks a capability message (content, using the
// capability of schema URL u) against the official schema of that
// capability, when AITP defines it; a capability of another origin is not
// checked (the node fetches no schema).
func checkMessage(u, content string) error {
	schemas, err := officialSchemas()
	if err != nil {
		return err
	}
	s, ok := schemas[capabilityKey(u)]
	if !ok {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		return err
	}
	return s.Validate(v)
}
