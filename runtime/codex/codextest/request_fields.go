package codextest

// Model returns the model the request names (codex sends turn/start's
// model, or the configured one, as the Responses "model" field).
func (r Request) Model() string { return str(r.Body["model"]) }

// ReasoningEffort returns the request's reasoning.effort: codex 0.169.0
// puts turn/start's effort there ("" when the request has none).
func (r Request) ReasoningEffort() string {
	reasoning, _ := r.Body["reasoning"].(map[string]any)
	return str(reasoning["effort"])
}
