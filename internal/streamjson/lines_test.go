package streamjson

// Lines shaped like what CLI 2.1.330 writes in background mode
// (CLAUDE_CLI_NOTES.md "Background mode"), used by the tests, the fuzz seeds
// and the benchmarks.
const (
	sessionID = "7f9ce4b8-b9fd-48e4-8f92-24f81d780210"

	lineControlResponseInit = `{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"commands":[{"name":"compact","description":"Clear conversation history but keep a summary in context","argumentHint":"<optional custom summarization instructions>"}],"agents":[{"name":"general-purpose","description":"General-purpose agent"}],"models":[{"value":"default","displayName":"Default (recommended)","description":"Sonnet 4.5"}],"account":{"apiKeySource":"ANTHROPIC_API_KEY"},"pid":41872,"claude_code_version":"2.1.330","current_permission_mode":"default","capabilities":{"interrupt":true}}}}`

	lineControlResponseMode = `{"type":"control_response","response":{"subtype":"success","request_id":"r2","response":{"mode":"default"}}}`

	lineControlResponseError = `{"type":"control_response","response":{"subtype":"error","request_id":"r7","error":"Unsupported control request subtype: rewind_files"}}`

	lineSystemInit = `{"type":"system","subtype":"init","cwd":"/home/dev/project","session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","tools":["Task","Bash","Glob","Grep","Read","Edit","Write","NotebookEdit","WebFetch","TodoWrite","WebSearch"],"mcp_servers":[{"name":"github","status":"connected"}],"model":"claude-sonnet-4-5-20250929","permissionMode":"default","slash_commands":["compact","context","cost","init","review"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330","output_style":"default","agents":["general-purpose","statusline-setup"],"skills":[],"plugins":[],"uuid":"5b0b1c3e-2f5e-4c1c-9a51-1c2b3d4e5f60"}`

	lineSystemHookResponse = `{"type":"system","subtype":"hook_response","hook_id":"h-1","hook_name":"PreToolUse:Bash","hook_event":"PreToolUse","exit_code":0,"outcome":"success","stdout":"","stderr":"","session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","uuid":"a1"}`

	lineAssistantToolUse = `{"type":"assistant","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[{"type":"text","text":"I'll run that for you."},{"type":"tool_use","id":"toolu_01JfiC8Xktjdoe7cUucSrajd","name":"Bash","input":{"command":"echo start && sleep 1","description":"Print start then sleep"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":1520,"cache_read_input_tokens":12034,"cache_creation":{"ephemeral_5m_input_tokens":1520,"ephemeral_1h_input_tokens":0},"output_tokens":26,"service_tier":"standard"},"context_management":null},"parent_tool_use_id":null,"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","uuid":"0c6f1e1a-8d7e-4b8e-9f3a-2a1b3c4d5e6f"}`

	lineAssistantText = `{"type":"assistant","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01Bq5yZzrXyNn3fyQ8kPz4Nw","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"The command printed start.","signature":"EqQBCkgIBxABGAIqQ"},{"type":"text","text":"The command printed:"},{"type":"text","text":"start"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":13554,"output_tokens":12,"service_tier":"standard"}},"parent_tool_use_id":null,"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","uuid":"9d2e3f40-1a2b-4c3d-8e9f-0a1b2c3d4e5f"}`

	lineUserToolResult = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01JfiC8Xktjdoe7cUucSrajd","type":"tool_result","content":"start","is_error":false}]},"parent_tool_use_id":null,"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","uuid":"e4f5a6b7-c8d9-4e0f-a1b2-c3d4e5f6a7b8","tool_use_result":{"stdout":"start","stderr":"","interrupted":false,"isImage":false}}`

	lineUserReplay = `{"type":"user","message":{"role":"user","content":"<local-command-stdout>Total cost: $0.0123</local-command-stdout>"},"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","parent_tool_use_id":null,"uuid":"u2","isReplay":true}`

	lineResultSuccess = `{"type":"result","subtype":"success","is_error":false,"duration_ms":5123,"duration_api_ms":4870,"num_turns":2,"result":"The command printed:\nstart","session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","total_cost_usd":0.0123456,"usage":{"input_tokens":11,"cache_creation_input_tokens":1520,"cache_read_input_tokens":25588,"output_tokens":38,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":1520}},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":11,"outputTokens":38,"cacheReadInputTokens":25588,"cacheCreationInputTokens":1520,"webSearchRequests":0,"costUSD":0.0123456,"contextWindow":200000}},"permission_denials":[],"uuid":"f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b"}`

	lineResultMaxTurns = `{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":20411,"duration_api_ms":19003,"num_turns":3,"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","total_cost_usd":0.05,"usage":{"input_tokens":30,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":120},"modelUsage":{},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_02","tool_input":{"command":"rm -rf build"}}],"errors":["Reached maximum number of turns (3)"],"uuid":"r3"}`

	lineStreamEvent = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The com"}},"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","parent_tool_use_id":null,"uuid":"s1"}`

	lineCanUseTool = `{"type":"control_request","request_id":"1f0c5d7e-0d8c-4f6b-9d0e-7a1b2c3d4e5f","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"echo start && sleep 1","description":"Print start then sleep"},"description":"Print start then sleep","decision_reason_type":"hook","permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"echo start:*"}],"behavior":"allow","destination":"localSettings"}],"blocked_path":"/etc/passwd","tool_use_id":"toolu_01JfiC8Xktjdoe7cUucSrajd"}}`

	lineHookCallback = `{"type":"control_request","request_id":"ccbe3752-64c9-4be6-9ee8-afed89a116e4","request":{"subtype":"hook_callback","callback_id":"tool_approval","input":{"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","transcript_path":"/root/.claude/projects/-home-dev-project/7f9ce4b8-b9fd-48e4-8f92-24f81d780210.jsonl","cwd":"/home/dev/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo hello"},"tool_use_id":"toolu_01JfiC8Xktjdoe7cUucSrajd"},"tool_use_id":"toolu_01JfiC8Xktjdoe7cUucSrajd"}}`

	lineControlRequestOther = `{"type":"control_request","request_id":"m1","request":{"subtype":"mcp_message","server_name":"ide","message":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}}`

	lineControlCancel = `{"type":"control_cancel_request","request_id":"1f0c5d7e-0d8c-4f6b-9d0e-7a1b2c3d4e5f"}`

	lineLegacyToolUse = `{"type":"tool_use","tool_name":"Bash","input":{"command":"ls"},"session_id":"legacy-1"}`

	lineLegacyToolResult = `{"type":"tool_result","result":[{"type":"text","text":"a.txt"}],"is_error":false,"session_id":"legacy-2"}`

	lineUnknownType = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1767225600,"utilization":0.91},"session_id":"7f9ce4b8-b9fd-48e4-8f92-24f81d780210","uuid":"x9"}`

	lineNoType = `{ "hello" : [1, 2.50, {"nested":"\u00e9\ud83d\ude00"}], "session_id":"x" }`
)

// realLines are the seeds of FuzzDecode and the round-trip tests.
var realLines = []string{
	lineControlResponseInit, lineControlResponseMode, lineControlResponseError,
	lineSystemInit, lineSystemHookResponse, lineAssistantToolUse, lineAssistantText,
	lineUserToolResult, lineUserReplay, lineResultSuccess, lineResultMaxTurns,
	lineStreamEvent, lineCanUseTool, lineHookCallback, lineControlRequestOther,
	lineControlCancel, lineLegacyToolUse, lineLegacyToolResult, lineUnknownType, lineNoType,
}
