package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// openAPI checks HTTP exchanges against an OpenAPI 3.1 document: that the
// operation and the status are documented, that the documented required
// headers are sent, and that the JSON body matches the response schema. It
// knows the subset of JSON Schema the /v1 document uses and refuses any
// other keyword, so the document cannot say something the tests do not
// check. It records what was checked, for coverage.
type openAPI struct {
	doc map[string]any

	mu   sync.Mutex
	seen map[string]bool // "METHOD /template STATUS"
}

func parseOpenAPI(raw []byte) (*openAPI, error) {
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	m, ok := doc.(map[string]any)
	if !ok || m["openapi"] != "3.1.0" {
		return nil, fmt.Errorf("not an OpenAPI 3.1.0 document")
	}
	a := &openAPI{doc: m, seen: map[string]bool{}}
	// Every schema, parameter and response must be one the validator reads.
	for name, s := range a.obj(a.obj(m, "components"), "schemas") {
		if err := a.checkSchema(s, "#/components/schemas/"+name, true); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// decodeJSON decodes one JSON value, keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func (a *openAPI) obj(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

// deref follows a local $ref ("#/components/...") to its target.
func (a *openAPI) deref(node map[string]any) (map[string]any, error) {
	for i := 0; i < 10; i++ {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, fmt.Errorf("unsupported $ref %q", ref)
		}
		var cur any = a.doc
		for _, part := range strings.Split(ref[2:], "/") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
			if cur, ok = m[part]; !ok {
				return nil, fmt.Errorf("$ref %q does not resolve", ref)
			}
		}
		if node, ok = cur.(map[string]any); !ok {
			return nil, fmt.Errorf("$ref %q is not an object", ref)
		}
	}
	return nil, fmt.Errorf("$ref chain too long")
}

// operation returns the operation object of method on path template tmpl.
func (a *openAPI) operation(method, tmpl string) (map[string]any, error) {
	item, ok := a.obj(a.doc, "paths")[tmpl].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("path %s is not documented", tmpl)
	}
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s is not documented", method, tmpl)
	}
	return op, nil
}

// match returns the documented path template of method that a concrete
// path matches, "" if none.
func (a *openAPI) match(method, path string) string {
	segs := strings.Split(path, "/")
	for tmpl := range a.obj(a.doc, "paths") {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			if ts[i] != segs[i] && !(strings.HasPrefix(ts[i], "{") && segs[i] != "") {
				ok = false
			}
		}
		if _, err := a.operation(method, tmpl); ok && err == nil {
			return tmpl
		}
	}
	return ""
}

// operations lists every documented "METHOD /template".
func (a *openAPI) operations() []string {
	var out []string
	for tmpl, item := range a.obj(a.doc, "paths") {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				out = append(out, strings.ToUpper(method)+" "+tmpl)
			}
		}
	}
	sort.Strings(out)
	return out
}

// statuses lists the documented response statuses of an operation.
func (a *openAPI) statuses(op string) []string {
	method, tmpl, _ := strings.Cut(op, " ")
	o, err := a.operation(method, tmpl)
	if err != nil {
		return nil
	}
	var out []string
	for status := range a.obj(o, "responses") {
		out = append(out, status)
	}
	sort.Strings(out)
	return out
}

// unchecked returns the documented "METHOD /template STATUS" triples that
// no checked exchange covered, leaving out the statuses in skip.
func (a *openAPI) unchecked(skip ...string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, op := range a.operations() {
		for _, st := range a.statuses(op) {
			if !slices.Contains(skip, st) && !a.seen[op+" "+st] {
				out = append(out, op+" "+st)
			}
		}
	}
	return out
}

// checkRequest validates a request body sent to method tmpl.
func (a *openAPI) checkRequest(method, tmpl string, body []byte) error {
	op, err := a.operation(method, tmpl)
	if err != nil {
		return err
	}
	rb, ok := op["requestBody"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s documents no request body", method, tmpl)
	}
	if rb, err = a.deref(rb); err != nil {
		return err
	}
	schema, ok := a.obj(a.obj(rb, "content"), "application/json")["schema"]
	if !ok {
		return fmt.Errorf("%s %s: request body has no application/json schema", method, tmpl)
	}
	v, err := decodeJSON(body)
	if err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	if err := a.validate(schema, v, "request"); err != nil {
		return fmt.Errorf("%s %s request: %w", method, tmpl, err)
	}
	return nil
}

// checkResponse validates one response of method tmpl: documented status,
// required headers, Content-Type and body. tmpl "" is an unknown route: the
// body must be an Error.
func (a *openAPI) checkResponse(method, tmpl string, status int, header map[string][]string, body []byte) error {
	if tmpl == "" {
		// A path the document does not have is 404; a documented path asked
		// with another method is 405 with the methods it has in Allow.
		if status != 404 && (status != 405 || len(headerValues(header, "Allow")) == 0) {
			return fmt.Errorf("unknown route %s answered %d, want 404 (or 405 with Allow)", method, status)
		}
		return a.checkBody(map[string]any{"$ref": "#/components/schemas/Error"}, header, body, "unknown route")
	}
	op, err := a.operation(method, tmpl)
	if err != nil {
		return err
	}
	resp, ok := a.obj(op, "responses")[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s: status %d is not documented (body %.200s)", method, tmpl, status, body)
	}
	if resp, err = a.deref(resp); err != nil {
		return err
	}
	for name, h := range a.obj(resp, "headers") {
		hm, _ := h.(map[string]any)
		if hm["required"] == true && len(headerValues(header, name)) == 0 {
			return fmt.Errorf("%s %s %d: required header %s missing", method, tmpl, status, name)
		}
	}
	where := fmt.Sprintf("%s %s %d", method, tmpl, status)
	content := a.obj(resp, "content")
	if content == nil {
		if len(body) != 0 {
			return fmt.Errorf("%s: documented without a body, got %.200q", where, body)
		}
	} else if _, ok := content["text/event-stream"]; ok {
		// A stream: its events are checked by the stream tests.
		if ct := strings.Join(headerValues(header, "Content-Type"), ","); !strings.HasPrefix(ct, "text/event-stream") {
			return fmt.Errorf("%s: Content-Type %q, want text/event-stream", where, ct)
		}
	} else {
		schema, ok := a.obj(content, "application/json")["schema"]
		if !ok {
			return fmt.Errorf("%s: no application/json schema", where)
		}
		if err := a.checkBody(schema, header, body, where); err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.seen[fmt.Sprintf("%s %s %d", method, tmpl, status)] = true
	a.mu.Unlock()
	return nil
}

func (a *openAPI) checkBody(schema any, header map[string][]string, body []byte, where string) error {
	ct := strings.Join(headerValues(header, "Content-Type"), ",")
	if !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%s: Content-Type %q, want application/json", where, ct)
	}
	v, err := decodeJSON(body)
	if err != nil {
		return fmt.Errorf("%s: body is not JSON: %v: %.200q", where, err, body)
	}
	if err := a.validate(schema, v, "body"); err != nil {
		return fmt.Errorf("%s: %w\nbody: %.500s", where, err, body)
	}
	return nil
}

func headerValues(h map[string][]string, name string) []string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// schemaKeywords are the keywords validate understands; annotations are
// the ones it reads past. Any other keyword in the document is an error.
var (
	schemaKeywords = []string{"$ref", "type", "properties", "required", "additionalProperties", "items",
		"enum", "minimum", "maximum", "minLength", "maxLength", "pattern", "format"}
	annotations = []string{"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
	formats     = []string{"int64", "int32", "date-time"}
)

// checkSchema refuses schemas that use what validate does not check: the
// schema s and, if deep, every schema inside it.
func (a *openAPI) checkSchema(s any, at string, deep bool) error {
	m, ok := s.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is not an object", at)
	}
	for k, v := range m {
		switch {
		case slices.Contains(annotations, k):
		case !slices.Contains(schemaKeywords, k):
			return fmt.Errorf("%s: keyword %q is not checked by the test validator", at, k)
		case k == "format" && !slices.Contains(formats, v.(string)):
			return fmt.Errorf("%s: format %q is not checked by the test validator", at, v)
		case !deep:
		case k == "properties":
			for name, p := range v.(map[string]any) {
				if err := a.checkSchema(p, at+"/properties/"+name, true); err != nil {
					return err
				}
			}
		case k == "items":
			if err := a.checkSchema(v, at+"/items", true); err != nil {
				return err
			}
		case k == "additionalProperties":
			if b, ok := v.(bool); ok && !b {
				continue
			}
			if err := a.checkSchema(v, at+"/additionalProperties", true); err != nil {
				return err
			}
		case k == "$ref":
			if _, err := a.deref(m); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
		}
	}
	return nil
}

// validate checks v (decoded with UseNumber) against schema; at names the
// place in the value for messages.
func (a *openAPI) validate(schema any, v any, at string) error {
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is not an object", at)
	}
	if err := a.checkSchema(s, at, false); err != nil {
		return err
	}
	if _, ok := s["$ref"]; ok {
		target, err := a.deref(s)
		if err != nil {
			return err
		}
		return a.validate(target, v, at)
	}
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			return fmt.Errorf("%s: %s is not of type %v", at, short(v), types)
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) && hasType(v, jsonTypeOf(e)) }) {
		return fmt.Errorf("%s: %s is not one of %v", at, short(v), enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, name := range req {
				if _, ok := v[name.(string)]; !ok {
					return fmt.Errorf("%s: required property %q missing", at, name)
				}
			}
		}
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if ps, ok := props[name]; ok {
				if err := a.validate(ps, v[name], at+"."+name); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: property %q is not allowed", at, name)
				}
			case map[string]any:
				if err := a.validate(ap, v[name], at+"."+name); err != nil {
					return err
				}
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, x := range v {
				if err := a.validate(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case json.Number:
		f, _ := v.Float64()
		if m, ok := s["minimum"].(json.Number); ok {
			if min, _ := m.Float64(); f < min {
				return fmt.Errorf("%s: %s is below the minimum %s", at, v, m)
			}
		}
		if m, ok := s["maximum"].(json.Number); ok {
			if max, _ := m.Float64(); f > max {
				return fmt.Errorf("%s: %s is above the maximum %s", at, v, m)
			}
		}
		if s["format"] == "int64" || s["format"] == "int32" {
			bits := 64
			if s["format"] == "int32" {
				bits = 32
			}
			if _, err := strconv.ParseInt(v.String(), 10, bits); err != nil {
				return fmt.Errorf("%s: %s is not an %s", at, v, s["format"])
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		if m, ok := s["minLength"].(json.Number); ok {
			if min, _ := m.Int64(); int64(n) < min {
				return fmt.Errorf("%s: %q is shorter than %s", at, v, m)
			}
		}
		if m, ok := s["maxLength"].(json.Number); ok {
			if max, _ := m.Int64(); int64(n) > max {
				return fmt.Errorf("%s: %.40q is longer than %s", at, v, m)
			}
		}
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("%s: pattern %q: %v", at, p, err)
			}
			if !re.MatchString(v) {
				return fmt.Errorf("%s: %q does not match %s", at, v, p)
			}
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				return fmt.Errorf("%s: %q is not an RFC 3339 date-time", at, v)
			}
		}
	}
	return nil
}

func hasType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		return err == nil
	}
	return false
}

func jsonTypeOf(v any) string {
	for _, t := range []string{"null", "boolean", "string", "object", "array", "integer", "number"} {
		if hasType(v, t) {
			return t
		}
	}
	return "?"
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
