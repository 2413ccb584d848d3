package a2abridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
)

// The client side of A2A 0.3: an imported agent whose card offers JSON-RPC
// of A2A 0.3 only is called with the 0.3 methods and shapes (rpcClient
// with v03), translated from and to the bridge's one model (wire03.go).

// endpointOf is the card's JSON-RPC endpoint: its first JSON-RPC interface
// of A2A 1.0 (one without a version counts as 1.0), else of A2A 0.3 (v03):
// a supportedInterfaces entry of version 0.3, the card's url when its
// preferredTransport is JSON-RPC (the 0.3 default), or an
// additionalInterfaces entry of transport JSON-RPC.
func endpointOf(card AgentCard) (u string, v03 bool, err error) {
	is03 := func(v string) bool { return v == version03 || strings.HasPrefix(v, version03+".") }
	for _, i := range card.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, BindingJSONRPC) && (i.ProtocolVersion == "" || i.ProtocolVersion == ProtocolVersion) && i.URL != "" {
			return i.URL, false, nil
		}
	}
	for _, i := range card.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, BindingJSONRPC) && is03(i.ProtocolVersion) && i.URL != "" {
			return i.URL, true, nil
		}
	}
	if card.URL != "" && (card.PreferredTransport == "" || strings.EqualFold(card.PreferredTransport, BindingJSONRPC)) {
		return card.URL, true, nil
	}
	for _, i := range card.AdditionalInterfaces {
		if strings.EqualFold(i.Transport, BindingJSONRPC) && i.URL != "" {
			return i.URL, true, nil
		}
	}
	return "", false, fmt.Errorf("a2a: agent %q offers no JSON-RPC interface of A2A %s or %s", card.Name, ProtocolVersion, version03)
}

// request03 is the 0.3 method and params of a 1.0 call.
func request03(method string, params any) (string, any) {
	if p, ok := params.(SendMessageRequest); ok {
		params = sendParams03(p)
	}
	if m := methods03Of10[method]; m != "" {
		method = m
	}
	return method, params
}

// event03Of decodes a 0.3 result (a task, message or stream event) into
// its 1.0 form.
func event03Of(result json.RawMessage) (StreamResponse, error) {
	ev, err := a2a.UnmarshalEventJSON(result)
	if err != nil {
		return StreamResponse{}, fmt.Errorf("a2a: an A2A %s result: %w", version03, err)
	}
	return event10(ev), nil
}
