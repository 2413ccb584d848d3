package a2abridge

import (
	"errors"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TextAction is the action of td that a message naming no action
// invokes: the agent's free-text action, the one the A2A bridge sends an
// A2A message without metadata "lmos:action" to (its only action). The
// other bridges that take natural language (Agora, AITP) call it, so that
// one rule picks the action for every protocol. Errors are the A2A
// bridge's messages, without its JSON-RPC code.
func TextAction(td *lmosproto.TD) (string, error) {
	name, err := actionOf(td)
	if err != nil {
		return "", errors.New(err.Message)
	}
	return name, nil
}

// TextInput is the input of action name (affordance a) for the text of
// a message, as the A2A bridge maps a message of text parts (inputOf):
// the text for a string input, a JSON object text or the text as the one
// string member of an object input, the parsed JSON for another type.
func TextInput(a *lmosproto.ActionAffordance, name, text string) (lmosproto.Value, error) {
	v, err := inputOf(a, name, []Part{{Text: &text}})
	if err != nil {
		return lmosproto.Value{}, errors.New(err.Message)
	}
	return v, nil
}
