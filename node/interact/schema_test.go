package interact

import (
	"fmt"
	"sync"
	"testing"
)

// TestSchemaCache: a schema is compiled once however many gets ask for it
// at once, and a full cache forgets the schema used least recently.
func TestSchemaCache(t *testing.T) {
	c := newSchemaCache(2)
	schema := func(n int) []byte { return fmt.Appendf(nil, `{"type":"string","maxLength":%d}`, n) }

	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Go(func() {
			s, err := c.get(schema(1))
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("concurrent gets of one schema compiled it more than once")
		}
	}

	one, _ := c.get(schema(1))
	two, _ := c.get(schema(2))
	_, _ = c.get(schema(1)) // now schema 2 is the least recently used
	_, _ = c.get(schema(3))
	if n := c.entries.Len(); n != 2 {
		t.Errorf("%d schemas held, size 2", n)
	}
	if s, _ := c.get(schema(1)); s != one {
		t.Error("schema 1, used recently, was forgotten")
	}
	if s, _ := c.get(schema(2)); s == two {
		t.Error("schema 2, the least recently used, was kept")
	}
	if _, err := c.get([]byte(`{"$ref":"https://example.com/s.json"}`)); err == nil {
		t.Error("a schema that loads another document compiled")
	}
}
