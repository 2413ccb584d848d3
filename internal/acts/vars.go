package acts

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// A variable reference (§8.1): {{name}}, {{step.var}}, {{env.NAME}} or
// {{$uuid}}.
var varRef = regexp.MustCompile(`\{\{\s*([^{}]+?)\s*\}\}`)

func newID() string { return uuid.NewString() }

// interpolate resolves the variables in every string of v (§12.2: the
// captures of prior steps, then the document's variables, then the
// environment, then $uuid). A string that is one reference takes the
// variable's value as it is (a captured object stays an object).
func (r *run) interpolate(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return r.interpolateString(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := r.interpolate(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := r.interpolate(e)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}

func (r *run) interpolateString(s string) (any, error) {
	if m := varRef.FindStringSubmatchIndex(s); m != nil && m[0] == 0 && m[1] == len(s) {
		return r.lookup(s[m[2]:m[3]], 0)
	}
	var firstErr error
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		v, err := r.lookup(varRef.FindStringSubmatch(ref)[1], 0)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return ref
		}
		return str(v)
	})
	return out, firstErr
}

// lookup resolves one variable name; depth bounds document variables that
// refer to others.
func (r *run) lookup(name string, depth int) (any, error) {
	if v, ok := r.vars[name]; ok {
		return v, nil
	}
	if v, ok := r.t.Variables[name]; ok && depth < 4 {
		if m := varRef.FindStringSubmatch(v); m != nil && m[0] == v {
			return r.lookup(m[1], depth+1)
		}
		return v, nil
	}
	if env, ok := strings.CutPrefix(name, "env."); ok {
		if v, ok := os.LookupEnv(env); ok {
			return v, nil
		}
	}
	if name == "$uuid" {
		return newID(), nil
	}
	return nil, fmt.Errorf("variable %q is not defined", name)
}

// until evaluates a repeat condition (§9.1): "path == value",
// "path != value" or "path in [v1, v2]" on the response root.
func until(expr string, root any) (bool, error) {
	for _, op := range []string{"==", "!=", " in "} {
		p, val, ok := strings.Cut(expr, op)
		if !ok {
			continue
		}
		got := str(resolveOne(root, strings.TrimSpace(p)))
		val = strings.TrimSpace(val)
		switch op {
		case "==":
			return got == unquote(val), nil
		case "!=":
			return got != unquote(val), nil
		}
		if !strings.HasPrefix(val, "[") || !strings.HasSuffix(val, "]") {
			return false, fmt.Errorf("until %q: the list must be in brackets", expr)
		}
		var list []string
		for _, e := range strings.Split(strings.Trim(val, "[]"), ",") {
			list = append(list, unquote(strings.TrimSpace(e)))
		}
		return slices.Contains(list, got), nil
	}
	return false, fmt.Errorf("until %q: want path == value, path != value or path in [values]", expr)
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
