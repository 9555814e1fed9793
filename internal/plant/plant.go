// Package plant is the domain of the plant store: what a plant is, which
// plants are valid, and what a repository of plants promises. It does no I/O.
package plant

import (
	"context"
	"errors"
)

// Plant is a stored plant. ID is its identity; the API never returns it
// (the specification's Plant has no id), but the store keys on it.
type Plant struct {
	ID   int64
	Name string
	// Tag is nil when the plant has none; a non-nil empty tag is a real,
	// empty tag and is kept distinct from "no tag".
	Tag *string
}

// SameContent reports whether two plants carry the same name and tag, the
// test that makes a repeated creation a safe retry rather than a conflict.
func (p Plant) SameContent(o Plant) bool {
	if p.Name != o.Name {
		return false
	}
	if p.Tag == nil || o.Tag == nil {
		return p.Tag == nil && o.Tag == nil
	}
	return *p.Tag == *o.Tag
}

// Outcome says what a successful Create did.
type Outcome int

const (
	// Created means the plant was new and is now stored.
	Created Outcome = iota + 1
	// Replayed means an identical plant was already stored under the id.
	Replayed
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Replayed:
		return "replayed"
	default:
		return "unknown"
	}
}

var (
	// ErrConflict means the id is already taken by a plant with a different
	// name or tag; the stored plant is unchanged.
	ErrConflict = errors.New("plant id already taken by a different plant")
	// ErrUnavailable means the store could not be reached or did not answer
	// in time. The caller may retry.
	ErrUnavailable = errors.New("plant store unavailable")
)

// Repository stores plants by id.
//
// Create stores p unless its id is taken. It is atomic: of many concurrent
// calls with one id exactly one content is stored. When the id holds a plant
// with the same content it returns that plant and Replayed; with different
// content it returns the stored plant and an error matching ErrConflict.
// Failures to reach the store match ErrUnavailable.
type Repository interface {
	Create(ctx context.Context, p Plant) (Plant, Outcome, error)
}
