package streamjson

// Usage is token usage as the CLI reports it in a result's (and an assistant
// message's) "usage" object. The JSON tags match the CLI, so a Usage can be
// passed on in the same shape.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// Add adds o to u, for totals across turns or runs.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
}

// Total is input plus output tokens, as seed 004 §4.3 counts them. Cache
// reads and writes are reported separately and not included, because the
// API bills them at different rates.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// IsZero reports whether no tokens were counted at all.
func (u Usage) IsZero() bool { return u == Usage{} }
