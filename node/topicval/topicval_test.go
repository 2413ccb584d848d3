package topicval

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

func TestResultName(t *testing.T) {
	for r, want := range map[pubsub.ValidationResult]string{
		pubsub.ValidationAccept: "accept",
		pubsub.ValidationReject: "reject",
		pubsub.ValidationIgnore: "ignore",
		42:                      "ValidationResult(42)",
	} {
		if got := ResultName(r); got != want {
			t.Errorf("ResultName(%d) = %q, want %q", int(r), got, want)
		}
	}
}
