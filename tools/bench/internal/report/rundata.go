package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EncodeRun is the run's data as the harness saves it beside the report
// (docs/performance.json), so that the figures block and the chart can be
// rendered again, and checked, without measuring again. A figure that is
// not a number (a phase that produced none) cannot be saved: such a run
// has failed, and its report is not the committed one.
func EncodeRun(r *Run) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the run's data: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeRun reads what EncodeRun wrote.
func DecodeRun(b []byte) (*Run, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Run
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the run's data: %w", err)
	}
	return &r, nil
}
