package acp

import (
	"encoding/json"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"
)

// mcpConfig turns ACP's mcpServers into Claude Code's mcpServers object, the
// prompt option mcp_servers (passed as --mcp-config): stdio servers with
// their command, args and env, http and sse servers with url and headers.
func mcpConfig(servers []acpsdk.McpServer) (json.RawMessage, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	add := func(i int, name string, v any) error {
		if name == "" {
			return fmt.Errorf("[%d]: a server needs a name", i)
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("[%d]: two servers are named %q", i, name)
		}
		out[name] = v
		return nil
	}
	for i, s := range servers {
		var err error
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			args := s.Stdio.Args
			if args == nil {
				args = []string{}
			}
			err = add(i, s.Stdio.Name, map[string]any{"type": "stdio", "command": s.Stdio.Command, "args": args, "env": env})
		case s.Http != nil:
			err = add(i, s.Http.Name, map[string]any{"type": "http", "url": s.Http.Url, "headers": headers(s.Http.Headers)})
		case s.Sse != nil:
			err = add(i, s.Sse.Name, map[string]any{"type": "sse", "url": s.Sse.Url, "headers": headers(s.Sse.Headers)})
		default:
			err = fmt.Errorf("[%d]: only stdio, http and sse servers are supported", i)
		}
		if err != nil {
			return nil, err
		}
	}
	return json.Marshal(out)
}

func headers(hs []acpsdk.HttpHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}
