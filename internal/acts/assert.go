package acts

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// An assertion (ACTS §5) is a bare scalar (exact match), a list
// (positional: element i asserts element i of the value) or a map whose
// keys are operators or, for every other key, fields of the value that
// the key's assertion applies to (YAML nesting mirrors the response).
//
// A key is an operator only when its assertion has the operator's shape
// ("type" with a string; a problem-details body has a field named "type",
// asserted with a map). The operators are those the corpus uses: type,
// exists, absent, contains, matches, starts_with, count, count_gte,
// count_lte, one_of, all_of, any_of and items (not in the ACTS grammar but
// used by the corpus: a map asserts every element of an array, a list
// asserts them by position).

// missing stands for an absent member: distinct from JSON null.
type missingT struct{}

var missing any = missingT{}

func isMissing(v any) bool { _, ok := v.(missingT); return ok }

// check returns nil when actual satisfies assertion a; path names actual
// in the message.
func check(a, actual any, path string) error {
	switch a := a.(type) {
	case map[string]any:
		return checkMap(a, actual, path)
	case []any:
		return checkList(a, actual, path)
	}
	if isMissing(actual) {
		return fmt.Errorf("%s: absent, want %s", path, show(a))
	}
	if !equal(a, actual) {
		return fmt.Errorf("%s: got %s, want %s", path, show(actual), show(a))
	}
	return nil
}

func checkList(a []any, actual any, path string) error {
	arr, ok := actual.([]any)
	if !ok {
		return fmt.Errorf("%s: got %s, want an array", path, show(actual))
	}
	if len(arr) < len(a) {
		return fmt.Errorf("%s: %d elements, want at least %d", path, len(arr), len(a))
	}
	for i, e := range a {
		if err := check(e, arr[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// operator reports whether key k with assertion v is an operator.
func operator(k string, v any) bool {
	switch k {
	case "type", "contains", "matches", "starts_with":
		_, ok := v.(string)
		return ok
	case "exists", "absent":
		_, ok := v.(bool)
		return ok
	case "count", "count_gte", "count_lte":
		_, ok := number(v)
		return ok
	case "one_of", "all_of", "any_of":
		_, ok := v.([]any)
		return ok
	case "items":
		switch v.(type) {
		case []any, map[string]any:
			return true
		}
	}
	return false
}

func checkMap(a map[string]any, actual any, path string) error {
	if v, ok := a["absent"]; ok && operator("absent", v) {
		if v == true && !isMissing(actual) {
			return fmt.Errorf("%s: present (%s), want absent", path, show(actual))
		}
		if len(a) == 1 {
			return nil
		}
	}
	if isMissing(actual) {
		if v, ok := a["any_of"]; ok && operator("any_of", v) {
			// absent may be one of the alternatives.
			return checkOp("any_of", v, actual, path)
		}
		return fmt.Errorf("%s: absent", path)
	}
	for _, k := range sortedKeys(a) {
		v := a[k]
		if k == "absent" && operator(k, v) {
			continue
		}
		var err error
		if operator(k, v) {
			err = checkOp(k, v, actual, path)
		} else {
			err = check(v, member(actual, k), path+"."+k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// member is the member k of object v, or missing.
func member(v any, k string) any {
	if m, ok := v.(map[string]any); ok {
		if x, ok := m[k]; ok {
			return x
		}
	}
	return missing
}

func checkOp(op string, want, actual any, path string) error {
	switch op {
	case "type":
		if got := typeOf(actual); got != want {
			return fmt.Errorf("%s: %s %s, want type %s", path, got, show(actual), want)
		}
	case "exists":
		// Reaching here means it is present.
		if want == false {
			return fmt.Errorf("%s: present, want it not to exist", path)
		}
	case "contains", "starts_with":
		s, ok := actual.(string)
		if !ok {
			return fmt.Errorf("%s: %s is not a string (%s %q)", path, show(actual), op, want)
		}
		if (op == "contains" && !strings.Contains(s, want.(string))) || (op == "starts_with" && !strings.HasPrefix(s, want.(string))) {
			return fmt.Errorf("%s: %q does not satisfy %s %q", path, s, op, want)
		}
	case "matches":
		return checkMatches(want.(string), actual, path)
	case "count", "count_gte", "count_lte":
		return checkCount(op, want, actual, path)
	case "one_of", "any_of":
		return checkAlternatives(op, want.([]any), actual, path)
	case "all_of":
		for _, alt := range want.([]any) {
			if err := check(alt, actual, path); err != nil {
				return err
			}
		}
	case "items":
		return checkItems(want, actual, path)
	}
	return nil
}

func checkMatches(re string, actual any, path string) error {
	s, ok := actual.(string)
	if !ok {
		return fmt.Errorf("%s: %s is not a string (matches %q)", path, show(actual), re)
	}
	// ECMA-262 and RE2 agree on the patterns the corpus uses (\d, {n},
	// anchors, classes).
	r, err := regexp.Compile(re)
	if err != nil {
		return fmt.Errorf("%s: pattern %q: %v", path, re, err)
	}
	if !r.MatchString(s) {
		return fmt.Errorf("%s: %q does not match %q", path, s, re)
	}
	return nil
}

func checkCount(op string, want, actual any, path string) error {
	arr, ok := actual.([]any)
	if !ok {
		return fmt.Errorf("%s: %s is not an array (%s)", path, show(actual), op)
	}
	n, _ := number(want)
	l := float64(len(arr))
	if (op == "count" && l != n) || (op == "count_gte" && l < n) || (op == "count_lte" && l > n) {
		return fmt.Errorf("%s: %d elements, want %s %v", path, len(arr), op, n)
	}
	return nil
}

// checkAlternatives passes when one alternative does: a map or list is an
// assertion, a scalar an exact value.
func checkAlternatives(op string, alts []any, actual any, path string) error {
	var msgs []string
	for _, alt := range alts {
		err := check(alt, actual, path)
		if err == nil {
			return nil
		}
		msgs = append(msgs, err.Error())
	}
	return fmt.Errorf("%s: none of %s holds: %s", path, op, strings.Join(msgs, "; "))
}

func checkItems(want, actual any, path string) error {
	arr, ok := actual.([]any)
	if !ok {
		return fmt.Errorf("%s: %s is not an array (items)", path, show(actual))
	}
	if list, ok := want.([]any); ok {
		return checkList(list, arr, path)
	}
	for i, e := range arr {
		if err := check(want, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// typeOf is the JSON type name of v.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case missingT:
		return "absent"
	}
	if _, ok := number(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// number returns v as a float64 when it is a number (YAML ints, JSON
// float64s).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return math.NaN(), false
}

// equal compares a YAML value with a JSON value: numbers by value.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

// show renders v for a message.
func show(v any) string {
	if isMissing(v) {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 1000 {
		return string(b[:1000]) + "…"
	}
	return string(b)
}

// resolve returns the values at dot path p in v: members, [n] indexes and
// [*] wildcards (which yield every element). A path that leads nowhere
// yields missing.
func resolve(v any, p string) []any {
	cur := []any{v}
	for _, seg := range splitPath(p) {
		var next []any
		for _, c := range cur {
			switch {
			case seg == "[*]":
				if arr, ok := c.([]any); ok {
					next = append(next, arr...)
				}
			case strings.HasPrefix(seg, "["):
				i, err := strconv.Atoi(strings.Trim(seg, "[]"))
				arr, ok := c.([]any)
				if err == nil && ok && i >= 0 && i < len(arr) {
					next = append(next, arr[i])
				} else {
					next = append(next, missing)
				}
			default:
				next = append(next, member(c, seg))
			}
		}
		cur = next
	}
	return cur
}

// resolveOne returns the single value at path p (no wildcard).
func resolveOne(v any, p string) any {
	vs := resolve(v, p)
	if len(vs) != 1 {
		return missing
	}
	return vs[0]
}

// splitPath splits "a.b[0].c[*]" into "a", "b", "[0]", "c", "[*]".
func splitPath(p string) []string {
	var segs []string
	for _, part := range strings.Split(p, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			switch {
			case i < 0:
				segs, part = append(segs, part), ""
			case i > 0:
				segs, part = append(segs, part[:i]), part[i:]
			default:
				j := strings.IndexByte(part, ']')
				if j < 0 {
					segs, part = append(segs, part), ""
					continue
				}
				segs, part = append(segs, part[:j+1]), part[j+1:]
			}
		}
	}
	return segs
}

func sortedKeys(m map[string]any) []string {
	// Deterministic messages: the first failing key in order.
	return slices.Sorted(maps.Keys(m))
}
