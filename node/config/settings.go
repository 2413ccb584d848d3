package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lmosnode/lmosnode/node/suggest"
)

// The settings of a Config, addressed by their JSON path: "dhtMode",
// "apiLimits.bodyTimeout". Every leaf field of Config (a field that is not
// itself a struct) is one setting; docs/config.md documents each, and a
// test keeps that reference in sync with Config. The environment variable
// of a setting is EnvPrefix followed by its path in upper snake case (see
// EnvName), e.g. LMOS_API_LIMITS_BODY_TIMEOUT; `lmosnode config get|set`
// take the path.

// EnvPrefix starts the name of every environment variable that overrides a
// setting.
const EnvPrefix = "LMOS_"

// HomeEnv names the home directory when no --home flag is given; it is
// no setting (config.json lives in the home).
const HomeEnv = "LMOS_HOME"

// Setting is one leaf of Config.
type Setting struct {
	// Path is the setting's JSON path, e.g. "apiLimits.bodyTimeout".
	Path string
	// Env is the environment variable that overrides it (EnvName(Path)).
	Env string
	// index locates the field in Config (reflect.Value.FieldByIndex).
	index []int
	typ   reflect.Type
}

// durationType is the one leaf type written as a string that is not a Go
// string.
var durationType = reflect.TypeFor[Duration]()

// Settings lists every setting of Config, in field order.
func Settings() []Setting {
	var out []Setting
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			path := prefix + name
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, path+".", idx)
				continue
			}
			out = append(out, Setting{Path: path, Env: EnvName(path), index: idx, typ: f.Type})
		}
	}
	walk(reflect.TypeFor[Config](), "", nil)
	return out
}

// EnvName is the environment variable of the setting at path: EnvPrefix,
// then the path with "." as "_", an "_" before each capital letter that
// follows a lower-case letter or a digit, all in upper case:
// apiLimits.bodyTimeout → LMOS_API_LIMITS_BODY_TIMEOUT, autoNAT →
// LMOS_AUTO_NAT, resources.maxFDs → LMOS_RESOURCES_MAX_FDS.
func EnvName(path string) string {
	var b strings.Builder
	b.WriteString(EnvPrefix)
	var prev rune
	for _, r := range path {
		switch {
		case r == '.':
			b.WriteByte('_')
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteRune(unicode.ToUpper(r))
		}
		prev = r
	}
	return b.String()
}

// LookupSetting finds the setting at path (case-sensitive, as in
// config.json).
func LookupSetting(path string) (Setting, error) {
	for _, s := range Settings() {
		if s.Path == path {
			return s, nil
		}
	}
	if near := nearestSetting(path); near != "" {
		return Setting{}, fmt.Errorf("config: no setting %q: did you mean %q? (docs/config.md lists every setting)", path, near)
	}
	return Setting{}, fmt.Errorf("config: no setting %q (docs/config.md lists every setting; 'lmosnode config show' prints them with their values)", path)
}

// nearestSetting returns the setting path closest to path, or "".
func nearestSetting(path string) string {
	paths := make([]string, 0, 64)
	for _, s := range Settings() {
		paths = append(paths, s.Path)
	}
	return suggest.Nearest(path, paths)
}

// Get returns the setting's value in c as JSON.
func (s Setting) Get(c Config) (json.RawMessage, error) {
	return json.Marshal(reflect.ValueOf(c).FieldByIndex(s.index).Interface())
}

// Set parses value as the setting's type and stores it in c. Strings and
// durations ("30s") are taken as written; a list is comma-separated
// ("a,b"; empty is the empty list) or a JSON array; booleans and numbers
// are JSON ("true", "64").
func (s Setting) Set(c *Config, value string) error {
	field := reflect.ValueOf(c).Elem().FieldByIndex(s.index)
	var doc []byte
	switch {
	case s.typ.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s: %q: want true or false", s.Path, value)
		}
		doc, _ = json.Marshal(b)
	case s.typ.Kind() == reflect.String, s.typ == durationType:
		doc, _ = json.Marshal(value)
	case s.typ.Kind() == reflect.Slice && s.typ.Elem().Kind() == reflect.String && !strings.HasPrefix(strings.TrimSpace(value), "["):
		items := []string{}
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		doc, _ = json.Marshal(items)
	default:
		doc = []byte(value)
	}
	v := reflect.New(s.typ)
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		return fmt.Errorf("%s: %q: %w", s.Path, value, err)
	}
	if dec.More() {
		return fmt.Errorf("%s: %q: trailing data", s.Path, value)
	}
	field.Set(v.Elem())
	return nil
}

// ApplyEnv overrides c's settings with the environment variables of
// Settings that lookup finds (os.LookupEnv). An empty variable counts as
// unset, as a shell or compose file writes "none given" (an empty list is
// "[]"). The error names the variable.
func ApplyEnv(c *Config, lookup func(string) (string, bool)) error {
	for _, s := range Settings() {
		v, ok := lookup(s.Env)
		if !ok || v == "" {
			continue
		}
		if err := s.Set(c, v); err != nil {
			return fmt.Errorf("$%s: %w", s.Env, err)
		}
	}
	return nil
}
