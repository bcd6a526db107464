package acp

import (
	"context"
	"fmt"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Config option IDs: the session's mode and model as selects, for clients
// that show config options rather than modes and models.
const (
	configMode  = "mode"
	configModel = "model"
)

// configOptions is the session's config options now.
func (s *session) configOptions() []acpsdk.SessionConfigOption {
	var out []acpsdk.SessionConfigOption
	modes := s.modes()
	var mopts acpsdk.SessionConfigSelectOptionsUngrouped
	for _, m := range modes.AvailableModes {
		mopts = append(mopts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description})
	}
	out = append(out, selectOption(configMode, "Mode", "Session permission mode", acpsdk.SessionConfigOptionCategoryMode,
		string(modes.CurrentModeId), mopts))
	if models := s.models(); models != nil {
		var opts acpsdk.SessionConfigSelectOptionsUngrouped
		for _, m := range models.AvailableModels {
			opts = append(opts, acpsdk.SessionConfigSelectOption{Value: acpsdk.SessionConfigValueId(m.ModelId), Name: m.Name, Description: m.Description})
		}
		out = append(out, selectOption(configModel, "Model", "AI model to use", acpsdk.SessionConfigOptionCategoryModel,
			string(models.CurrentModelId), opts))
	}
	return out
}

func selectOption(id, name, desc string, cat acpsdk.SessionConfigOptionCategory, cur string, opts acpsdk.SessionConfigSelectOptionsUngrouped) acpsdk.SessionConfigOption {
	o := acpsdk.NewSessionConfigOptionSelect(acpsdk.SessionConfigValueId(cur), acpsdk.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id, o.Select.Name, o.Select.Description, o.Select.Category = acpsdk.SessionConfigId(id), name, &desc, &cat
	return o
}

// setConfig applies one config option: the mode or the model.
func (s *session) setConfig(ctx context.Context, id, value string) ([]acpsdk.SessionConfigOption, error) {
	var err error
	switch id {
	case configMode:
		err = s.setMode(ctx, value)
	case configModel:
		err = s.setModel(ctx, value)
	default:
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown config option %q (options: %s, %s)", id, configMode, configModel)})
	}
	if err != nil {
		return nil, err
	}
	return s.configOptions(), nil
}

func (s *session) offersModel(id string) bool { return slices.Contains(s.modelIDs(), id) }

func (s *session) modelIDs() []string {
	var ids []string
	if m := s.models(); m != nil {
		for _, x := range m.AvailableModels {
			ids = append(ids, string(x.ModelId))
		}
	}
	return ids
}
