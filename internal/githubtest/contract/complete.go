package contract

import (
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// Complete marshals a handler's body and fills every required field the handler left out with a neutral
// value of the right type (null where the schema allows it), following the operation's response schema.
// Handlers thus state only what the server models; the result is then validated like any response, so a
// wrong type or enum value in what a handler did set is still caught.
func (o *Operation) Complete(status int, body any) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("marshalling body: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("unmarshalling body: %w", err)
	}
	schema := responseSchema(o.Route, status)
	if schema == nil {
		return raw, nil
	}
	return json.Marshal(fill(schema, v, 0))
}

func responseSchema(route *routers.Route, status int) *openapi3.Schema {
	if route.Operation == nil || route.Operation.Responses == nil {
		return nil
	}
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return nil
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return nil
	}
	return mt.Schema.Value
}

const maxDepth = 12

func fill(s *openapi3.Schema, v any, depth int) any {
	if s == nil || depth > maxDepth {
		return v
	}
	for _, sub := range s.AllOf {
		v = fill(sub.Value, v, depth+1)
	}
	if alts := append(append([]*openapi3.SchemaRef{}, s.OneOf...), s.AnyOf...); len(alts) > 0 {
		if v == nil && s.Nullable {
			return nil
		}
		for _, alt := range alts {
			if alt.Value == nil {
				continue
			}
			f := fill(alt.Value, clone(v), depth+1)
			if alt.Value.VisitJSON(f) == nil {
				return f
			}
		}
		if alts[0].Value != nil {
			return fill(alts[0].Value, v, depth+1)
		}
		return v
	}
	switch {
	case s.Type.Is("object") || (s.Type.IsEmpty() && len(s.Properties) > 0):
		m, isMap := v.(map[string]any)
		if !isMap {
			if v != nil {
				return v // wrong type: leave it for validation to report
			}
			m = map[string]any{}
		}
		for _, name := range s.Required {
			if _, ok := m[name]; !ok {
				m[name] = zero(s.Properties[name], depth+1)
			}
		}
		for name, val := range m {
			if p := s.Properties[name]; p != nil && val != nil {
				m[name] = fill(p.Value, val, depth+1)
			}
		}
		return m
	case s.Type.Is("array"):
		a, isSlice := v.([]any)
		if !isSlice || s.Items == nil {
			return v
		}
		for i := range a {
			a[i] = fill(s.Items.Value, a[i], depth+1)
		}
		return a
	}
	return v
}

func zero(ref *openapi3.SchemaRef, depth int) any {
	if ref == nil || ref.Value == nil {
		return nil
	}
	s := ref.Value
	if s.Nullable || s.Type.IncludesNull() {
		return nil
	}
	if len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) > 0 {
		return fill(s, nil, depth)
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch {
	case s.Type.Is("object"), s.Type.IsEmpty() && len(s.Properties) > 0:
		return fill(s, map[string]any{}, depth)
	case s.Type.Is("array"):
		return []any{}
	case s.Type.Is("string"):
		switch s.Format {
		case "date-time":
			return "2026-01-01T00:00:00Z"
		case "uri":
			return "https://github.invalid/"
		case "email":
			return "nobody@github.invalid"
		}
		return ""
	case s.Type.Is("integer"), s.Type.Is("number"):
		if s.Min != nil {
			return *s.Min
		}
		return 0
	case s.Type.Is("boolean"):
		return false
	}
	return nil
}

func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = clone(x)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, x := range t {
			a[i] = clone(x)
		}
		return a
	}
	return v
}
