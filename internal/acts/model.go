package acts

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Corpus is A2A's ACTS corpus (a2aproject/A2A branch conformance-spec,
// tests/acts at dbcabfba, Apache-2.0, corpus/LICENSE); its master file is
// "corpus/suite.acts.yaml".
//
//go:embed corpus
var Corpus embed.FS

// CorpusMaster is the master file of Corpus.
const CorpusMaster = "corpus/suite.acts.yaml"

// Document is an ACTS file (§2).
type Document struct {
	ActsVersion string            `yaml:"acts_version"`
	SpecVersion string            `yaml:"spec_version"`
	Variables   map[string]string `yaml:"variables"`
	Include     []string          `yaml:"include"`
	Suites      []Suite           `yaml:"suites"`
}

// Suite is a group of tests (§3.1).
type Suite struct {
	ID    string   `yaml:"id"`
	Name  string   `yaml:"name"`
	Tags  []string `yaml:"tags"`
	Tests []Test   `yaml:"tests"`
}

// Test is one conformance scenario (§3.2).
type Test struct {
	ID                 string           `yaml:"id"`
	Name               string           `yaml:"name"`
	Description        string           `yaml:"description"`
	Level              string           `yaml:"level"`
	Tags               []string         `yaml:"tags"`
	Transport          []string         `yaml:"transport"`
	Preconditions      *Preconditions   `yaml:"preconditions"`
	RequiresBehaviors  []string         `yaml:"requires_behaviors"`
	RunnerRequirements []string         `yaml:"runner_requirements"`
	Steps              []Step           `yaml:"steps"`
	Assertions         []NamedAssertion `yaml:"assertions"`

	// Suite is the id of the test's suite; SpecVersion and Variables come
	// from its document (and the master's variables).
	Suite       string            `yaml:"-"`
	SpecVersion string            `yaml:"-"`
	Variables   map[string]string `yaml:"-"`
}

// Preconditions say what the SUT must advertise for a test to apply (§3.3).
type Preconditions struct {
	Capabilities map[string]any        `yaml:"capabilities"`
	Skills       []struct{ ID string } `yaml:"skills"`
	Transport    []string              `yaml:"transport"`
	Extensions   []string              `yaml:"extensions"`
	Description  string                `yaml:"description"`
}

// Step is a server, raw, assertion or client step (§4).
type Step struct {
	ID           string            `yaml:"id"`
	Operation    string            `yaml:"operation"`
	Params       map[string]any    `yaml:"params"`
	Raw          *RawRequest       `yaml:"raw"`
	Expect       map[string]any    `yaml:"expect"`
	ExpectError  map[string]any    `yaml:"expect_error"`
	ExpectStream map[string]any    `yaml:"expect_stream"`
	Capture      map[string]string `yaml:"capture"`
	Assertions   []NamedAssertion  `yaml:"assertions"`
	Repeat       *Repeat           `yaml:"repeat"`
	DelayMS      int               `yaml:"delay_ms"`
	// Assertion is an assertion step's.
	Assertion *NamedAssertion `yaml:"assertion"`
	// ClientResponse and ExpectParsed make a client step (§10).
	ClientResponse *ClientResponse `yaml:"client_response"`
	ExpectParsed   map[string]any  `yaml:"expect_parsed"`
}

// RawRequest is a raw wire step's request (§4.4).
type RawRequest struct {
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    any               `yaml:"body"`
	BodyRaw *string           `yaml:"body_raw"`
}

// NamedAssertion is a post-step or test assertion, or an assertion step's
// (§5.5).
type NamedAssertion struct {
	ID     string           `yaml:"id"`
	Source string           `yaml:"source"`
	Path   string           `yaml:"path"`
	Match  any              `yaml:"match"`
	Any    *CollectionMatch `yaml:"any"`
	All    *CollectionMatch `yaml:"all"`
	None   *CollectionMatch `yaml:"none"`
}

// CollectionMatch asserts the elements at a wildcard path.
type CollectionMatch struct {
	Path  string         `yaml:"path"`
	Match map[string]any `yaml:"match"`
}

// Repeat re-runs a step until a condition holds (§9).
type Repeat struct {
	Until       string `yaml:"until"`
	MaxAttempts int    `yaml:"max_attempts"`
	DelayMS     *int   `yaml:"delay_ms"`
	Backoff     string `yaml:"backoff"`
}

// ClientResponse is a canonical payload for the client to parse.
type ClientResponse struct {
	Operation   string `yaml:"operation"`
	WirePayload any    `yaml:"wire_payload"`
}

// Load reads the ACTS document master of fsys and the documents it
// includes (paths relative to it), and returns their tests in order.
func Load(fsys fs.FS, master string) ([]Test, error) {
	root, err := readDoc(fsys, master)
	if err != nil {
		return nil, err
	}
	docs := []*Document{root}
	for _, inc := range root.Include {
		d, err := readDoc(fsys, path.Join(path.Dir(master), inc))
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	var tests []Test
	seen := map[string]bool{}
	for _, d := range docs {
		vars := maps.Clone(root.Variables)
		if vars == nil {
			vars = map[string]string{}
		}
		maps.Copy(vars, d.Variables)
		for _, s := range d.Suites {
			for _, t := range s.Tests {
				key := s.ID + "/" + t.ID
				if seen[key] {
					return nil, fmt.Errorf("acts: test %s defined twice", key)
				}
				seen[key] = true
				t.Suite, t.SpecVersion, t.Variables = s.ID, d.SpecVersion, vars
				if err := t.validate(); err != nil {
					return nil, err
				}
				tests = append(tests, t)
			}
		}
	}
	return tests, nil
}

func readDoc(fsys fs.FS, name string) (*Document, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("acts: %w", err)
	}
	var d Document
	if err := yaml.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("acts: %s: %w", name, err)
	}
	// §17: a runner rejects a major version it does not support.
	if major, _, _ := strings.Cut(d.ActsVersion, "."); major != "1" {
		return nil, fmt.Errorf("acts: %s: acts_version %q is not 1.x", name, d.ActsVersion)
	}
	if len(d.Suites) == 0 && len(d.Include) == 0 {
		return nil, fmt.Errorf("acts: %s has neither suites nor include", name)
	}
	return &d, nil
}

// validate checks what the runner relies on (§12.1).
func (t *Test) validate() error {
	switch t.Level {
	case "must", "should", "may":
	default:
		return fmt.Errorf("acts: test %s: level %q", t.ID, t.Level)
	}
	if len(t.Steps) == 0 {
		return fmt.Errorf("acts: test %s has no steps", t.ID)
	}
	for _, s := range t.Steps {
		kinds := 0
		for _, set := range []bool{s.Operation != "", s.Raw != nil, s.Assertion != nil, s.ClientResponse != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 || s.ID == "" {
			return fmt.Errorf("acts: test %s: step %q must be exactly one of operation, raw, assertion, client_response", t.ID, s.ID)
		}
	}
	return nil
}
