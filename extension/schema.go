package extension

import _ "embed"

// Schema is protocol.schema.json, the machine-readable protocol, embedded so
// `claude-relay extension --schema` can print it wherever the binary is.
//
//go:embed protocol.schema.json
var Schema []byte
