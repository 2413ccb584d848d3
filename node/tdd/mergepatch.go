package tdd

// mergePatch applies an RFC 7396 JSON merge patch to target, both decoded
// JSON (map[string]any for objects). target's maps are modified in place.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = make(map[string]any, len(p))
	}
	for name, value := range p {
		if value == nil {
			delete(t, name)
			continue
		}
		t[name] = mergePatch(t[name], value)
	}
	return t
}
