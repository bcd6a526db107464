package postgres

import (
	"testing"

	"github.com/claude-relay/claude-relay/internal/server/store"
)

func TestPayload(t *testing.T) {
	cases := []struct {
		payload string
		want    store.Notification
		ok      bool
	}{
		{"s1:12", store.Notification{SessionID: "s1", Cursor: 12}, true},
		{"a:b:3", store.Notification{SessionID: "a:b", Cursor: 3}, true},
		{":3", store.Notification{}, false},
		{"s1:x", store.Notification{}, false},
		{"s1", store.Notification{}, false},
	}
	for _, tc := range cases {
		got, ok := parsePayload(tc.payload)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parsePayload(%q) = %+v, %v; want %+v, %v", tc.payload, got, ok, tc.want, tc.ok)
		}
		if ok && formatPayload(got) != tc.payload {
			t.Errorf("formatPayload(%+v) = %q, want %q", got, formatPayload(got), tc.payload)
		}
	}
}
