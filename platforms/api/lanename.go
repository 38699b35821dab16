package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/gatewayd/gatewayd/gateway"
)

// LaneSessionKey returns the session key of the API lane called name
// ("v1:api:<name>"), and false when name is not one the API accepts
// (1-128 of A-Z a-z 0-9 . _ -), so other routes name lanes the same way.
func LaneSessionKey(name string) (string, bool) {
	if !laneName.MatchString(name) {
		return "", false
	}
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneAPI, ChatID: name}.SessionKey(), true
}

// forkSuffixLen is the length of "-fork-" and the random part after it.
const forkSuffixLen = len("-fork-") + 8

// OpenPlace opens the API lane a /fork of near goes on: near's name with
// "-fork-" and eight random hex digits (cut to fit 128). The title names
// the lane in the console; a client finds the lane's session key in the
// answer's "fork".
func (p *Platform) OpenPlace(_ context.Context, near gateway.Address, _ string) (gateway.Address, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return gateway.Address{}, fmt.Errorf("api: fork lane name: %w", err)
	}
	base := near.ChatID
	if len(base) > 128-forkSuffixLen {
		base = base[:128-forkSuffixLen]
	}
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneAPI, ChatID: base + "-fork-" + hex.EncodeToString(b[:])}, nil
}
