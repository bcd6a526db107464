package streamjson

import "testing"

func TestSetModelRequest(t *testing.T) {
	tests := []struct {
		model, want string
	}{
		{"claude-haiku-4-5", `{"type":"control_request","request_id":"m1","request":{"subtype":"set_model","model":"claude-haiku-4-5"}}`},
		// No model: the key is left out, which the CLI takes as its default.
		{"", `{"type":"control_request","request_id":"m1","request":{"subtype":"set_model"}}`},
	}
	for _, tt := range tests {
		req := ControlRequest{RequestID: "m1", Request: SetModelRequest{Model: tt.model}}
		line, err := req.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(line) != tt.want {
			t.Errorf("SetModelRequest{%q} =\n %s\nwant\n %s", tt.model, line, tt.want)
		}
		if req.Subtype() != SubtypeSetModel {
			t.Errorf("subtype %q", req.Subtype())
		}
		got, ok := mustDecode(t, string(line)).ControlRequest.Request.(*SetModelRequest)
		if !ok || got.Model != tt.model {
			t.Errorf("decoded %#v", mustDecode(t, string(line)).ControlRequest.Request)
		}
	}
}
