// Package wsgateway carries LMOS interactions over WebSocket, sub-protocol
// "lmosprotocol" (spec/lmos/11-websocket_binding.md): a Gateway for
// consumers and an AgentGateway for agents that serve their Things from
// behind any firewall.
package wsgateway
