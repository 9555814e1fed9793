package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode is a Run's or a ScaleRun's data as the harness saves it beside
// the report (docs/performance.json, docs/performance-scale.json), so that
// the block and the chart can be rendered again, and checked, without
// measuring again. A figure that is not a number (a phase that produced
// none) cannot be saved: such a run has failed, and its report is not the
// committed one.
func Encode[T Run | ScaleRun](r *T) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the run's data: %w", err)
	}
	return append(b, '\n'), nil
}

// Decode reads what Encode wrote; a field the run does not have is an error.
func Decode[T Run | ScaleRun](b []byte) (*T, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r T
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the run's data: %w", err)
	}
	return &r, nil
}
