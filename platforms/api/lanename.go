package api

import "github.com/gatewayd/gatewayd/gateway"

// LaneSessionKey returns the session key of the API lane called name
// ("v1:api:<name>"), and false when name is not one the API accepts
// (1-128 of A-Z a-z 0-9 . _ -), so other routes name lanes the same way.
func LaneSessionKey(name string) (string, bool) {
	if !laneName.MatchString(name) {
		return "", false
	}
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneAPI, ChatID: name}.SessionKey(), true
}
