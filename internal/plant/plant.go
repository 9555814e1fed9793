// Package plant is the domain of the plant store: what a plant is, which
// plants are valid, and what a repository of plants promises. It does no I/O.
package plant

import (
	"context"
	"errors"
)

// Plant is a stored plant. ID is its identity: POST /plants answers without
// it (the specification's Plant has no id), reads and lists carry it.
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
	// ErrNotFound means no plant has the id.
	ErrNotFound = errors.New("no plant has that id")
	// ErrFull means the store refused to grow: it is out of memory and
	// evicts nothing. Nothing was written; retrying does not help until an
	// operator frees memory or raises the limit.
	ErrFull = errors.New("plant store full")
)

// Repository stores plants by id, in id order.
//
// Create stores p unless its id is taken. It is atomic: of many concurrent
// calls with one id exactly one content is stored. When the id holds a plant
// with the same content it returns that plant and Replayed; with different
// content it returns the stored plant and an error matching ErrConflict.
//
// Get returns the plant stored under id, or an error matching ErrNotFound.
//
// Delete removes the plant stored under id, or returns an error matching
// ErrNotFound; the id is then free for Create again.
//
// List returns, in ascending id order, at most limit plants whose ids follow
// after (all plants when after is nil), and whether more plants follow them.
// Create, Delete and the order List reads change together atomically: no
// list returns a plant that a Get begun after the list returned answers
// ErrNotFound for, unless a Delete of it ran in between. A list reads a
// bounded amount, whatever the size of the store.
//
// Failures to reach the store match ErrUnavailable.
type Repository interface {
	Create(ctx context.Context, p Plant) (Plant, Outcome, error)
	Get(ctx context.Context, id int64) (Plant, error)
	Delete(ctx context.Context, id int64) error
	List(ctx context.Context, after *int64, limit int) (Page, error)
}

// Page is one page of a listing.
type Page struct {
	Plants []Plant
	// More reports that plants with ids after Cursor may exist.
	More bool
	// Cursor is the id the next page starts after, when More. It is the last
	// id the page considered, which is the last of Plants unless plants were
	// deleted while the page was read.
	Cursor int64
}

// The bounds of a page's limit, and the default.
const (
	MinPageLimit     = 1
	MaxPageLimit     = 100
	DefaultPageLimit = 20
)
