package mockapi

import (
	"encoding/json"
	"slices"
)

// classifierStop is the stop sequence of the auto-mode safety classifier,
// which must answer "<block>no</block>" (allow) or "<block>yes</block>...".
const classifierStop = "</block>"

// sideReply answers a request that is not the main conversation with
// something the CLI can use, so its side tasks succeed on the first try:
// a JSON object for structured-output requests (session titles), an
// "allow" verdict for the safety classifier (tests decide permissions
// through hooks and can_use_tool, not through the model), and "ok"
// otherwise.
func sideReply(b messagesBody) reply {
	switch {
	case b.OutputConfig.Format != nil && b.OutputConfig.Format.Type == "json_schema":
		return textReply(schemaExample(b.OutputConfig.Format.Schema))
	case slices.Contains(b.StopSequences, classifierStop):
		r := textReply("<block>no")
		r.stopReason = "stop_sequence"
		r.stopSequence = classifierStop
		return r
	default:
		return textReply("ok")
	}
}

// schemaExample returns a JSON value that satisfies a simple JSON schema:
// every property filled with a placeholder of its type.
func schemaExample(schema map[string]any) string {
	js, err := json.Marshal(exampleFor(schema))
	if err != nil {
		return "{}"
	}
	return string(js)
}

func exampleFor(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch schema["type"] {
	case "object":
		props, _ := schema["properties"].(map[string]any)
		out := make(map[string]any, len(props))
		for k, p := range props {
			sub, _ := p.(map[string]any)
			out[k] = exampleFor(sub)
		}
		return out
	case "array":
		return []any{}
	case "boolean":
		return false
	case "integer", "number":
		return 0
	case "null":
		return nil
	default:
		return "Mock session"
	}
}
