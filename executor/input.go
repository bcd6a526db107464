package executor

import (
	"encoding/json"

	"github.com/claude-relay/claude-relay/internal/streamjson"
	"github.com/claude-relay/claude-relay/internal/wire"
)

// InputKind says what an Input asks of a live run.
type InputKind int

// Inputs a keep-alive run takes (Request.Inputs).
const (
	InputSend      InputKind = iota + 1 // a follow-up: the next turn, queued while a turn runs
	InputInterrupt                      // stop the running turn; the run stays live
	InputSetMode                        // change the permission mode
	InputSetModel                       // change the model
	InputEnd                            // close the run after its current turn and the queued sends
)

// Input is one follow-up or mid-run control for a live run.
type Input struct {
	Kind    InputKind
	Content json.RawMessage           // InputSend: the user message content, a JSON string or an array of content blocks
	Mode    streamjson.PermissionMode // InputSetMode
	Model   string                    // InputSetModel ("" = the default model)
	// Interaction (InputSend) is the interaction the send's turn belongs
	// to: the run's registry record names it once the turn starts.
	Interaction string
	// By (InputInterrupt) is who stopped the turn, which it is reported
	// with (StatusInterrupted).
	By wire.By
	// DropQueued (InputInterrupt): the sends queued behind the running turn
	// are dropped too (EventTurnDropped each), so none of them runs.
	DropQueued bool
	// Done, when set (buffered by the sender), gets nil once the CLI
	// confirmed (set_mode, set_model: its control response; interrupt: sent)
	// or the message was queued (send), else an error.
	Done chan<- error
}
