package extension

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-relay/claude-relay/internal/content"
)

// The schema is the extension authors' copy of protocol.go. These tests keep
// the two from drifting: every json field of the Go types is in the schema
// with a compatible type, every schema property is a Go field, and real lines
// validate against it.

// schemaDoc is protocol.schema.json with a validator for the keywords it
// uses: $ref (local), type, enum, const, required, properties,
// additionalProperties, items, oneOf, minimum and format date-time.
type schemaDoc struct {
	root map[string]any
}

var (
	loadSchemaOnce sync.Once
	loadedSchema   *schemaDoc
	loadSchemaErr  error
)

func loadSchema(t testing.TB) *schemaDoc {
	t.Helper()
	loadSchemaOnce.Do(func() {
		b, err := os.ReadFile("protocol.schema.json")
		if err != nil {
			loadSchemaErr = err
			return
		}
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			loadSchemaErr = fmt.Errorf("protocol.schema.json is not JSON: %w", err)
			return
		}
		loadedSchema = &schemaDoc{root: root}
	})
	if loadSchemaErr != nil {
		t.Fatal(loadSchemaErr)
	}
	return loadedSchema
}

// def returns $defs/name.
func (d *schemaDoc) def(t testing.TB, name string) map[string]any {
	t.Helper()
	defs, _ := d.root["$defs"].(map[string]any)
	s, ok := defs[name].(map[string]any)
	if !ok {
		t.Fatalf("schema has no $defs/%s", name)
	}
	return s
}

// ref resolves a local reference "#/$defs/name".
func (d *schemaDoc) ref(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("unsupported $ref %q (only #/$defs/...)", ref)
	}
	defs, _ := d.root["$defs"].(map[string]any)
	s, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("dangling $ref %q", ref)
	}
	return s, nil
}

// deref follows $ref until a schema without one.
func (d *schemaDoc) deref(s map[string]any) map[string]any {
	for i := 0; i < 16; i++ {
		r, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		next, err := d.ref(r)
		if err != nil {
			return s
		}
		s = next
	}
	return s
}

// validate checks v against s. Strict also reports object members that no
// applicable schema declares: the schema allows unknown fields, but what the
// helper writes must all be documented.
func (d *schemaDoc) validate(s any, v any, path string, strict bool) []string {
	errs, known, open := d.eval(s, v, path, strict)
	if obj, ok := v.(map[string]any); ok && strict && !open && len(known) > 0 {
		for k := range obj {
			if !known[k] {
				errs = append(errs, fmt.Sprintf("%s: member %q is not in the schema", path, k))
			}
		}
	}
	sort.Strings(errs)
	return errs
}

// eval returns the errors, the member names the schema declares for an
// object value, and whether it admits any member (additionalProperties).
func (d *schemaDoc) eval(sAny any, v any, path string, strict bool) (errs []string, known map[string]bool, open bool) {
	known = map[string]bool{}
	s, ok := sAny.(map[string]any)
	if !ok {
		if b, isBool := sAny.(bool); isBool && b {
			return nil, known, true
		}
		return []string{path + ": schema is not an object"}, known, false
	}
	if r, ok := s["$ref"].(string); ok {
		target, err := d.ref(r)
		if err != nil {
			return []string{path + ": " + err.Error()}, known, false
		}
		e, k, o := d.eval(target, v, path, strict)
		errs = append(errs, e...)
		maps(known, k)
		open = open || o
	}
	if t, ok := s["type"]; ok {
		if !typeMatches(t, v) {
			errs = append(errs, fmt.Sprintf("%s: %s is not of type %v", path, short(v), t))
		}
	}
	if en, ok := s["enum"].([]any); ok && !slices.ContainsFunc(en, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		errs = append(errs, fmt.Sprintf("%s: %s is not one of %v", path, short(v), en))
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, v) {
		errs = append(errs, fmt.Sprintf("%s: %s is not %v", path, short(v), c))
	}
	if min, ok := s["minimum"].(float64); ok {
		if n, isNum := v.(float64); isNum && n < min {
			errs = append(errs, fmt.Sprintf("%s: %v is below %v", path, n, min))
		}
	}
	if s["format"] == "date-time" {
		if str, isStr := v.(string); isStr {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not an RFC 3339 date-time", path, str))
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		for _, r := range asList(s["required"]) {
			if _, present := obj[r.(string)]; !present {
				errs = append(errs, fmt.Sprintf("%s: required member %q missing", path, r))
			}
		}
		props, _ := s["properties"].(map[string]any)
		for name, ps := range props {
			known[name] = true
			if val, present := obj[name]; present {
				errs = append(errs, d.validate(ps, val, path+"."+name, strict)...)
			}
		}
		if ap, ok := s["additionalProperties"]; ok {
			if b, isBool := ap.(bool); !isBool || b {
				open = true
			}
			for k, val := range obj {
				if _, declared := props[k]; !declared {
					if b, isBool := ap.(bool); isBool && !b {
						errs = append(errs, fmt.Sprintf("%s: member %q not allowed", path, k))
						continue
					}
					errs = append(errs, d.validate(ap, val, path+"."+k, strict)...)
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"]; ok {
			for i, x := range arr {
				errs = append(errs, d.validate(items, x, fmt.Sprintf("%s[%d]", path, i), strict)...)
			}
		}
	}
	if one, ok := s["oneOf"].([]any); ok {
		var matched int
		var best []string
		for _, b := range one {
			e, k, o := d.eval(b, v, path, strict)
			if len(e) == 0 {
				matched++
				maps(known, k)
				open = open || o
				continue
			}
			if best == nil || len(e) < len(best) {
				best = e
			}
		}
		switch {
		case matched == 0:
			errs = append(errs, fmt.Sprintf("%s: matches none of oneOf; closest: %s", path, strings.Join(best, "; ")))
		case matched > 1:
			errs = append(errs, fmt.Sprintf("%s: matches %d branches of oneOf", path, matched))
		}
	}
	return errs, known, open
}

func maps(dst, src map[string]bool) {
	for k, v := range src {
		dst[k] = v
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func typeMatches(t any, v any) bool {
	if l, ok := t.([]any); ok {
		return slices.ContainsFunc(l, func(x any) bool { return typeMatches(x, v) })
	}
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == math.Trunc(n)
	case "null":
		return v == nil
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// validateLine validates one NDJSON line against the whole schema.
func (d *schemaDoc) validateLine(line []byte, strict bool) []string {
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	return d.validate(d.root, v, "$", strict)
}

// schemaTypes says which JSON types a schema admits: its type keyword, or
// the types of its enum or const values.
func (d *schemaDoc) schemaTypes(s map[string]any) []string {
	s = d.deref(s)
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	vals := asList(s["enum"])
	if c, ok := s["const"]; ok {
		vals = append(vals, c)
	}
	var out []string
	for _, v := range vals {
		var jt string
		switch x := v.(type) {
		case string:
			jt = "string"
		case bool:
			jt = "boolean"
		case float64:
			jt = "number"
			if x == math.Trunc(x) {
				jt = "integer"
			}
		}
		if !slices.Contains(out, jt) {
			out = append(out, jt)
		}
	}
	return out
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// defOf names the $defs entry each nested Go struct type must reference.
var defOf = map[reflect.Type]string{
	reflect.TypeFor[PromptOptions](): "promptOptions",
	reflect.TypeFor[Result]():        "result",
	reflect.TypeFor[Usage]():         "usage",
	reflect.TypeFor[RunInfo]():       "runInfo",
	reflect.TypeFor[ForwarderInfo](): "forwarderInfo",
	reflect.TypeFor[content.Block](): "contentBlock",
}

// compatible reports why a schema property cannot hold a Go type's JSON, or "".
func (d *schemaDoc) compatible(s map[string]any, t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := defOf[t]; ok {
		if r, _ := s["$ref"].(string); r != "#/$defs/"+name {
			return fmt.Sprintf("%s must be {\"$ref\": \"#/$defs/%s\"}, schema has %v", t, name, s)
		}
		return ""
	}
	types := d.schemaTypes(s)
	want := func(jt string) string {
		if !slices.Contains(types, jt) {
			return fmt.Sprintf("Go %s encodes as %s, schema says %v", t, jt, types)
		}
		return ""
	}
	switch {
	case t == timeType:
		if msg := want("string"); msg != "" {
			return msg
		}
		if d.deref(s)["format"] != "date-time" {
			return "a time.Time must have format date-time"
		}
		return ""
	case t == rawType:
		// Payloads and tool inputs are the CLI's JSON objects.
		return want("object")
	}
	switch t.Kind() {
	case reflect.String:
		return want("string")
	case reflect.Bool:
		return want("boolean")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if slices.Contains(types, "integer") {
			return ""
		}
		return want("integer")
	case reflect.Float32, reflect.Float64:
		return want("number")
	case reflect.Slice:
		if msg := want("array"); msg != "" {
			return msg
		}
		items, ok := d.deref(s)["items"].(map[string]any)
		if !ok {
			return "an array needs items"
		}
		return d.compatible(items, t.Elem())
	case reflect.Map:
		if msg := want("object"); msg != "" {
			return msg
		}
		ap, ok := d.deref(s)["additionalProperties"].(map[string]any)
		if !ok {
			return "a map needs additionalProperties with a schema"
		}
		return d.compatible(ap, t.Elem())
	}
	return fmt.Sprintf("no JSON Schema mapping for Go %s", t)
}

// jsonFields lists a struct's json field names with their types and whether
// they are omitted when empty.
type jsonField struct {
	name      string
	typ       reflect.Type
	omitEmpty bool
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			// encoding/json puts an untagged embedded struct's fields in
			// the outer object (PromptOptions' executor.RunOptions).
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		tag, ok := f.Tag.Lookup("json")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		out = append(out, jsonField{name: name, typ: f.Type,
			omitEmpty: strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")})
	}
	return out
}

// variantProps gathers, per property name, the schemas the branches of a
// union (and its own properties) give it.
func (d *schemaDoc) variantProps(union map[string]any) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	add := func(s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			out[name] = append(out[name], p.(map[string]any))
		}
	}
	add(union)
	for _, b := range asList(union["oneOf"]) {
		add(d.deref(b.(map[string]any)))
	}
	return out
}

func TestSchemaMatchesGoTypes(t *testing.T) {
	d := loadSchema(t)
	if d.root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", d.root["$schema"])
	}
	tests := []struct {
		goType reflect.Type
		def    string
		union  bool // the def is a oneOf whose branches share the Go struct
	}{
		{reflect.TypeFor[Command](), "command", true},
		{reflect.TypeFor[PromptOptions](), "promptOptions", false},
		{reflect.TypeFor[Event](), "event", true},
		{reflect.TypeFor[Result](), "result", false},
		{reflect.TypeFor[Usage](), "usage", false},
		{reflect.TypeFor[RunInfo](), "runInfo", false},
		{reflect.TypeFor[ForwarderInfo](), "forwarderInfo", false},
	}
	for _, tt := range tests {
		t.Run(tt.goType.Name(), func(t *testing.T) {
			def := d.def(t, tt.def)
			var props map[string][]map[string]any
			if tt.union {
				props = d.variantProps(def)
			} else {
				props = d.variantProps(map[string]any{"properties": def["properties"]})
			}
			fields := jsonFields(tt.goType)
			goNames := map[string]bool{}
			for _, f := range fields {
				goNames[f.name] = true
				schemas, ok := props[f.name]
				if !ok {
					t.Errorf("Go field %s.%s (json %q) is not in $defs/%s", tt.goType.Name(), f.name, f.name, tt.def)
					continue
				}
				for _, s := range schemas {
					if msg := d.compatible(s, f.typ); msg != "" {
						t.Errorf("%s.%s: %s", tt.goType.Name(), f.name, msg)
					}
				}
			}
			for name := range props {
				if !goNames[name] {
					t.Errorf("schema property %q of $defs/%s has no field in Go %s", name, tt.def, tt.goType.Name())
				}
			}
			if tt.union {
				return
			}
			// Plain structs: required exactly when Go always writes the field.
			var required []string
			for _, r := range asList(def["required"]) {
				required = append(required, r.(string))
			}
			for _, f := range fields {
				if f.omitEmpty == slices.Contains(required, f.name) {
					t.Errorf("%s.%s: omitempty=%v but required=%v in the schema", tt.goType.Name(), f.name, f.omitEmpty, !f.omitEmpty)
				}
			}
		})
	}
}

// enumOf collects the values a union's branches allow for a discriminator.
func (d *schemaDoc) enumOf(union map[string]any, prop string) []string {
	var out []string
	for _, b := range asList(union["oneOf"]) {
		s := d.deref(b.(map[string]any))
		p, _ := s["properties"].(map[string]any)
		ps, _ := p[prop].(map[string]any)
		for _, v := range asList(ps["enum"]) {
			out = append(out, v.(string))
		}
	}
	sort.Strings(out)
	return out
}

func TestSchemaNamesEveryActionEventAndCode(t *testing.T) {
	d := loadSchema(t)
	actions := []string{ActionPrompt, ActionCancel, ActionApprove, ActionStatus, ActionTerminal, ActionShutdown,
		ActionSend, ActionInterrupt, ActionSetMode, ActionSetModel, ActionEnd}
	events := []string{EventReady, EventRunStarted, EventStream, EventApprovalRequested, EventApprovalCancelled,
		EventRunCompleted, EventRunFailed, EventRunCancelled, EventLimitNotice, EventState, EventStatus,
		EventTerminalCommand, EventError, EventSignal, EventAutoShutdown, EventShutdown,
		EventTurnCompleted, EventSessionInfo, EventModeChanged, EventPartial, EventStalled}
	codes := []string{CodeBadJSON, CodeUnknownAction, CodeMissingField, CodeBadValue, CodeLineTooLong, CodeUnknownRun,
		CodeUnknownApprove, CodeShuttingDown, CodeRunConflict, CodeSpool, CodeAuth, CodeDeadLetter, CodeSpoolFull, CodeInternal,
		CodeMalformedOutput, CodeCLINotFound, CodeNotLive, CodeCLIRefused}
	sort.Strings(actions)
	sort.Strings(events)
	if got := d.enumOf(d.def(t, "command"), "action"); !slices.Equal(got, actions) {
		t.Errorf("command actions in the schema %v, Go has %v", got, actions)
	}
	if got := d.enumOf(d.def(t, "event"), "event"); !slices.Equal(got, events) {
		t.Errorf("events in the schema %v, Go has %v", got, events)
	}
	errProps := d.def(t, "errorEvent")["properties"].(map[string]any)
	var schemaCodes []string
	for _, c := range asList(errProps["code"].(map[string]any)["enum"]) {
		schemaCodes = append(schemaCodes, c.(string))
	}
	for _, c := range codes {
		if !slices.Contains(schemaCodes, c) {
			t.Errorf("error code %q is not in $defs/errorEvent", c)
		}
	}
	stateProps := d.def(t, "stateEvent")["properties"].(map[string]any)
	if got := asList(stateProps["state"].(map[string]any)["enum"]); !reflect.DeepEqual(got, []any{StateIdle, StateRunning}) {
		t.Errorf("states %v", got)
	}
	ready := d.def(t, "readyEvent")["properties"].(map[string]any)
	if got := asList(ready["protocol"].(map[string]any)["enum"]); !reflect.DeepEqual(got, []any{float64(ProtocolVersion)}) {
		t.Errorf("ready protocol %v, Go says %d", got, ProtocolVersion)
	}
}

func TestSchemaValidatesSamples(t *testing.T) {
	d := loadSchema(t)
	ts := `"timestamp":"2026-11-21T22:14:26.729123Z"`
	valid := []string{
		// CONTRACT §4's commands.
		`{"action":"prompt","request_id":"r1","run_id":"opt","session_id":"s1","interaction_id":"i1","prompt":"...","options":{"cwd":"...","model":"...","permission_mode":"acceptEdits","approvals":false,"resume":"c1","resume_last_session":false,"fork":false,"continue":false,"max_turns":0,"system_prompt_append":"...","env":{"A":"b"},"additional_args":["--x"],"exit_on_complete":false}}`,
		`{"action":"cancel","request_id":"r2","run_id":"r"}`,
		`{"action":"cancel"}`,
		`{"action":"approve","request_id":"r3","run_id":"x","approval_id":"a1","decision":"deny","reason":"no"}`,
		`{"action":"status","request_id":"r4"}`,
		`{"action":"terminal","request_id":"r5","session_id":"s1","interaction_id":"i2","prompt":"...","options":{"cwd":"/w","resume":"c"}}`,
		`{"action":"shutdown","request_id":"r6"}`,
		// Events as the helper writes them.
		`{"event":"ready",` + ts + `,"version":"dev","protocol":2,"pid":42,"cli_path":"/bin/claude","cli_version":"2.1.330","backend":"http://127.0.0.1:1","dashboard":"http://127.0.0.1:1"}`,
		`{"event":"run_started",` + ts + `,"request_id":"r1","run_id":"u","session_id":"s","interaction_id":"i","cwd":"/w"}`,
		`{"event":"stream",` + ts + `,"run_id":"u","session_id":"s","payload":{"type":"system","subtype":"init"}}`,
		`{"event":"approval_requested",` + ts + `,"run_id":"u","session_id":"s","approval_id":"a","tool_name":"Write","input":{"file_path":"/x"},"tool_use_id":"t"}`,
		`{"event":"approval_cancelled",` + ts + `,"run_id":"u","session_id":"s","approval_id":"a","reason":"cancelled"}`,
		`{"event":"run_completed",` + ts + `,"run_id":"u","session_id":"s","interaction_id":"i","result":{"stdout":"ok","stderr":"","exitCode":0,"duration_ms":12},"conversation_id":"c","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"total_cost_usd":0.01}`,
		`{"event":"run_failed",` + ts + `,"run_id":"u","session_id":"s","result":{"stdout":"","stderr":"Maximum turns reached","exitCode":1,"duration_ms":1},"reason":"max turns"}`,
		`{"event":"run_cancelled",` + ts + `,"run_id":"u","session_id":"s","result":{"stdout":"","stderr":"","exitCode":130,"duration_ms":1}}`,
		`{"event":"limit_notice",` + ts + `,"run_id":"u","session_id":"s","message":"usage limit"}`,
		`{"event":"state",` + ts + `,"state":"executing"}`,
		`{"event":"status",` + ts + `,"request_id":"r4","state":"executing","runs":[{"run_id":"u","session_id":"s","interaction_id":"i","started_at":"2026-11-21T22:14:26+01:00","pending_approvals":0}],"forwarder":{"pending":1,"in_flight":0,"delivered":3,"retried":0,"dead_lettered":0,"spool_bytes":100}}`,
		`{"event":"terminal_command",` + ts + `,"request_id":"r5","session_id":"s","interaction_id":"i","argv":["claude"],"cwd":"/w","env":{"A":"b"}}`,
		`{"event":"error",` + ts + `,"request_id":"r9","code":"bad_json","message":"bad JSON"}`,
		`{"event":"signal",` + ts + `,"signal":"terminated"}`,
		`{"event":"auto_shutdown",` + ts + `,"run_id":"u","reason":"exit_on_complete"}`,
		`{"event":"shutdown",` + ts + `,"reason":"stdin closed","forwarder":{"pending":0,"in_flight":0,"delivered":3,"retried":0,"dead_lettered":0,"spool_bytes":0}}`,
	}
	for _, line := range valid {
		if errs := d.validateLine([]byte(line), true); len(errs) > 0 {
			t.Errorf("%s\n  should be valid: %v", line, errs)
		}
	}
	// Unknown fields are allowed (the strict mode of these tests is stricter
	// than the schema).
	if errs := d.validateLine([]byte(`{"action":"status","unknown_field":1}`), false); len(errs) > 0 {
		t.Errorf("unknown fields must be allowed: %v", errs)
	}
	invalid := []string{
		`{"action":"prompt","request_id":"r1","prompt":5}`, // prompt not a string
		`{"action":"dance"}`,  // unknown action
		`{"request_id":"r1"}`, // no action
		`{"action":"approve","approval_id":"a","decision":"maybe"}`, // bad decision
		`{"action":"prompt","prompt":"x","options":{"max_turns":"4"}}`,
		`{"action":"prompt","prompt":"x","options":{"permission_mode":"yolo"}}`,
		`{"event":"state",` + ts + `,"state":"busy"}`,
		`{"event":"state","state":"idle"}`, // no timestamp
		`{"event":"state","timestamp":"yesterday","state":"idle"}`,
		`{"event":"nope",` + ts + `}`,
		`{"event":"ready",` + ts + `,"protocol":3,"pid":1}`,
		`{"event":"stream",` + ts + `,"run_id":"u","session_id":"s","payload":"text"}`,
		`{"event":"run_completed",` + ts + `,"run_id":"u","session_id":"s","result":{"stdout":"","exitCode":0}}`,
		`[1,2]`,
	}
	for _, line := range invalid {
		if errs := d.validateLine([]byte(line), false); len(errs) == 0 {
			t.Errorf("%s\n  should be invalid", line)
		}
	}
	// Strict mode catches an undocumented member of an event.
	if errs := d.validateLine([]byte(`{"event":"state",`+ts+`,"state":"idle","colour":"red"}`), true); len(errs) == 0 {
		t.Error("strict validation should report an undocumented member")
	}
}

// TestSchemaValidatesGoEncodedEvents encodes one Event of each kind the way
// the server fills them and validates the JSON.
func TestSchemaValidatesGoEncodedEvents(t *testing.T) {
	d := loadSchema(t)
	now := time.Now().UTC()
	cost := 0.5
	fi := &ForwarderInfo{Pending: 1, Delivered: 2}
	res := &Result{Stdout: "ok", ExitCode: 0, DurationMS: 3}
	evs := []Event{
		{Event: EventReady, Version: "dev", Protocol: ProtocolVersion, PID: 1, CLIError: "none found"},
		{Event: EventRunStarted, RunID: "r", SessionID: "s", InteractionID: "i", Cwd: "/"},
		{Event: EventStream, RunID: "r", SessionID: "s", Payload: json.RawMessage(`{"type":"assistant"}`)},
		{Event: EventApprovalRequested, RunID: "r", SessionID: "s", ApprovalID: "a", ToolName: "Bash", Input: json.RawMessage(`{}`), ToolUseID: "t", Message: "runs ls"},
		{Event: EventApprovalCancelled, RunID: "r", SessionID: "s", ApprovalID: "a", Reason: "cancelled"},
		{Event: EventRunCompleted, RunID: "r", SessionID: "s", InteractionID: "i", Result: res, ConversationID: "c", Usage: &Usage{InputTokens: 1}, TotalCostUSD: &cost},
		{Event: EventRunFailed, RunID: "r", SessionID: "s", InteractionID: "i", Result: res, Reason: "boom"},
		{Event: EventRunCancelled, RunID: "r", SessionID: "s", InteractionID: "i", Result: res},
		{Event: EventLimitNotice, RunID: "r", SessionID: "s", Message: "limit"},
		{Event: EventState, State: StateIdle},
		{Event: EventStatus, RequestID: "q", State: StateRunning, Runs: []RunInfo{{RunID: "r", StartedAt: time.Now()}}, Forwarder: fi},
		{Event: EventTerminalCommand, RequestID: "q", SessionID: "s", InteractionID: "i", Argv: []string{"claude"}, Cwd: "/", Env: map[string]string{"K": "v"}},
		{Event: EventError, RequestID: "q", Code: CodeBadJSON, Message: "bad"},
		{Event: EventSignal, Signal: "interrupt", Message: "second signal"},
		{Event: EventAutoShutdown, RunID: "r", Reason: "exit_on_complete"},
		{Event: EventShutdown, Reason: "stdin closed", Message: "left in the spool", Forwarder: fi},
	}
	for _, ev := range evs {
		ev.Timestamp = now
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if errs := d.validateLine(b, true); len(errs) > 0 {
			t.Errorf("%s: %v", b, errs)
		}
	}
}
