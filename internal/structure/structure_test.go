package structure

import (
	"encoding/json"
	"os/exec"
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
