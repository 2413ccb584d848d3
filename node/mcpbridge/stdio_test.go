package mcpbridge

import (
	"encoding/json"
	"testing"
)

func TestAnswers(t *testing.T) {
	cases := []struct {
		msg, id string
		want    bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, `3`, true},
		{`{"jsonrpc":"2.0","id": "a","error":{"code":1,"message":"x"}}`, `"a"`, true},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, `4`, false},
		{`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`, `3`, false}, // a request of the server
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, `3`, false},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, ``, false}, // a notification has no answer
		{`not json`, `3`, false},
	}
	for _, c := range cases {
		if got := answers([]byte(c.msg), json.RawMessage(c.id)); got != c.want {
			t.Errorf("answers(%s, %s) = %v, want %v", c.msg, c.id, got, c.want)
		}
	}
}
