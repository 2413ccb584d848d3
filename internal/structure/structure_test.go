package structure

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/lmosnode/lmosnode"

type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
	Name       string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func TestEveryPackageHasDocComment(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.Name == "main" {
			if p.Doc == "" {
				t.Errorf("%s: command has no doc comment", p.ImportPath)
			}
			continue
		}
		want := "Package " + p.Name + " "
		if !strings.HasPrefix(p.Doc, want) {
			t.Errorf("%s: package doc comment must start with %q, got %q", p.ImportPath, want, p.Doc)
		}
	}
}

// allowed lists, per package of ours (by path prefix below the module), the
// packages of ours it may import. Anything not listed may import anything
// below it in the direction proto ← dht, groups ← node ← cmd.
var rank = map[string]int{
	"proto":    0,
	"dht":      1,
	"groups":   1,
	"node":     2,
	"internal": 3,
	"examples": 3,
	"cmd":      4,
}

func top(importPath string) string {
	rest := strings.TrimPrefix(importPath, module+"/")
	first, _, _ := strings.Cut(rest, "/")
	return first
}

func TestDependencyDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		from := top(p.ImportPath)
		rf, ok := rank[from]
		if !ok {
			t.Errorf("%s: top-level directory %q has no place in the dependency order; add it to rank", p.ImportPath, from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := top(imp)
			if from == "proto" {
				t.Errorf("%s imports %s: proto imports nothing else of ours", p.ImportPath, imp)
				continue
			}
			if to == from {
				continue
			}
			if rt := rank[to]; rt >= rf {
				t.Errorf("%s imports %s: %s may only import packages below it (proto ← dht, groups ← node ← cmd)", p.ImportPath, imp, from)
			}
		}
	}
}

// nodeRank orders the packages below node/ (by path below the module; a
// sub-package takes the rank of its longest listed prefix). A package may
// import only packages of a lower rank:
//
//   - 0, leaves: small single-purpose helpers;
//   - 1, the models the node is built on: the directory of Things and the
//     interaction engine (the message model itself is proto);
//   - 2, what reads them: the cache of parsed TDs;
//   - 3, the transports and HTTP surfaces: they import only the message
//     model, the interaction engine and the directory, and declare what
//     else they need as interfaces;
//   - 4, the services: the federation, groups, discovery and the node's
//     own Things; and the serialisable configuration;
//   - 5, what sits on a service or on the configuration: its HTTP API
//     (groupsvc/groupapi), a test kit that builds one (tdd/tddtest), the
//     home directory, the translation of the configuration into libp2p;
//   - 6, the local HTTP API, which mounts every surface;
//   - 7, its one client;
//   - 8, the root package node, the composition root: nothing below
//     node/ imports it, and of the CLI only the commands that run a node
//     (TestCLIRunsNodeOnlyWhereItRunsOne).
var nodeRank = map[string]int{
	"node/peerlimit":  0,
	"node/httpapi":    0,
	"node/backoff":    0,
	"node/atomicfile": 0,
	"node/topicval":   0,
	"node/datastore":  0,
	"node/logroute":   0,
	"node/metrics":    0,
	"node/trust":      0,
	"node/version":    0,
	"node/suggest":    0,
	// The did:web / did:wba resolver: HTTPS, a cache, DID documents.
	"node/did": 0,
	// Key records: the registry (its offline rotation of a home, which
	// opens the directory and the home, sits with the API, rank 6).
	"node/rotation": 0,

	// The trust list's HTTP API, beside the list.
	"node/trust/trustapi": 1,

	"node/directory": 1,
	"node/interact":  1,

	"node/tdcache": 2,

	"node/gateway":   3,
	"node/wsgateway": 3,
	"node/mqttgw":    3,
	"node/fanout":    3,
	"node/tdd":       3,
	"node/a2abridge": 3,
	"node/mcpbridge": 3,
	"node/aicatalog": 3,
	"node/anp":       3,
	"node/console":   3,

	// The agents.json export and import.
	"node/agentsjson": 3,

	"node/discovery":  4,
	"node/federation": 4,
	"node/groupsvc":   4,
	"node/own":        4,
	// Agora sits on the A2A bridge's rule of an agent's free-text action
	// (a2abridge.TextAction), AITP on Agora's conversations.
	"node/agora": 4,
	"node/aitp":  5,
	// The serialisable configuration: it validates what the
	// directory, MQTT and API settings mean.
	"node/config": 4,

	// The groups HTTP API sits on the group service it serves; the
	// directory API's test kit builds the own Things.
	"node/groupsvc/groupapi": 5,
	"node/tdd/tddtest":       5,
	// The home directory: its files, written with the config.
	"node/homedir": 5,
	// The one translation of Config into libp2p, kad-dht and pubsub
	// options; NAT and ports.
	"node/p2p": 5,

	// The local API: every surface's routes on one mux, the access
	// guards, the limits, the node's own routes.
	"node/api":             6,
	"node/rotation/rotate": 6,
	// The one client of the local API: the wire types of every surface.
	"node/apiclient": 7,

	"node": 8,
}

// rankOf returns the rank of a package below node/ by its longest listed
// prefix, and false for an unlisted one.
func rankOf(rel string) (int, bool) {
	for p := rel; ; {
		if r, ok := nodeRank[p]; ok {
			return r, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return 0, false
		}
		p = p[:i]
	}
}

func TestNodeLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if top(p.ImportPath) != "node" {
			continue
		}
		if rel != "node" {
			if _, listed := nodeRank[rel]; !listed && !strings.Contains(strings.TrimPrefix(rel, "node/"), "/") {
				t.Errorf("%s: package below node/ has no place in nodeRank; add it", p.ImportPath)
				continue
			}
		}
		rf, _ := rankOf(rel)
		for _, imp := range p.Imports {
			irel, ok := strings.CutPrefix(imp, module+"/")
			if !ok || top(imp) != "node" {
				continue
			}
			if family := strings.HasPrefix(irel+"/", rel+"/") || strings.HasPrefix(rel+"/", irel+"/"); family && rel != "node" && irel != "node" {
				continue // a package and its sub-packages (node/tdd/tddtest)
			}
			if ri, _ := rankOf(irel); ri >= rf {
				t.Errorf("%s (rank %d) imports %s (rank %d): below node/, a package imports only lower ranks (see nodeRank)", p.ImportPath, rf, imp, ri)
			}
		}
	}
}

// TestCLIRunsNodeOnlyWhereItRunsOne: of the CLI's files, only the commands
// that run a node (up, demo) import the root package node; every other
// command talks to a node through node/apiclient, and reads the home and
// config through node/homedir and node/config.
func TestCLIRunsNodeOnlyWhereItRunsOne(t *testing.T) {
	allowed := map[string]bool{"up.go": true, "demo.go": true}
	files, err := filepath.Glob(filepath.Join("..", "..", "cmd", "lmosnode", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/lmosnode: %v %v", files, err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"`+module+`/node"` && !allowed[name] {
				t.Errorf("cmd/lmosnode/%s imports %s/node: only up.go and demo.go run a node; use node/apiclient, node/config or node/homedir", name, module)
			}
		}
	}
}
