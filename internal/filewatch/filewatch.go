// Package filewatch keeps what a file configures in force as the file
// changes: the auth tokens file and the webhook subscribers file. It polls
// the file's content rather than watching inotify events: that follows every
// way a file changes, including the symlink swap by which Kubernetes updates
// a mounted Secret, and costs one small read per interval.
package filewatch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
)

// Apply parses a new content of the file and puts it in force, returning the
// fields of the log entry that says so. An error refuses the content as a
// whole and leaves what is in force; it is logged and observed, so it must
// not quote the content (a token, a secret).
type Apply func(data []byte) ([]zap.Field, error)

// Options configure a Reloader.
type Options struct {
	// What the file holds, for Load's errors: "auth tokens".
	What string
	// Path is the file; Interval (positive) how often it is read.
	Path     string
	Interval time.Duration
	// Current is the content in force when the reloader is made (its owner
	// read and applied it): only a change of it is applied.
	Current []byte
	// The messages of the log entries, naming what the file holds:
	// Unreadable (error) when the file cannot be read, Refused (error) when
	// Apply refuses a change, Reloaded (info) when a change is in force.
	Unreadable, Refused, Reloaded string
}

// Reloader rereads a file every interval and applies each change. A file
// that cannot be read, or whose change Apply refuses, leaves what is in
// force, and is reported (logged and observed) once, not on every poll while
// it lasts; the content in force coming back ends the failure silently.
type Reloader struct {
	o       Options
	apply   Apply
	log     *zap.Logger
	observe func(error)

	lastSum [sha256.Size]byte
	// failedSum and lastFailure remember the failure being reported, so a
	// broken file is reported once rather than on every poll.
	failedSum   [sha256.Size]byte
	lastFailure string
}

// Load reads o.Path and applies it, then returns the reloader that keeps it
// in force once run (New). Its errors name the file by o.What.
func Load(o Options, apply Apply, log *zap.Logger, observe func(error)) (*Reloader, error) {
	if o.Interval <= 0 {
		// time.NewTicker would panic in Run, after the application started.
		return nil, fmt.Errorf("the %s reload interval must be positive, got %v", o.What, o.Interval)
	}
	data, err := os.ReadFile(o.Path)
	if err != nil {
		return nil, fmt.Errorf("reading the %s file: %w", o.What, err)
	}
	if _, err := apply(data); err != nil {
		return nil, fmt.Errorf("%s file %s: %w", o.What, o.Path, err)
	}
	o.Current = data
	return New(o, apply, log, observe)
}

// New returns a reloader of o.Path that apply keeps in force once run.
// observe (may be nil) is told of every reload attempt that applied a change
// (nil) or reported a failure (the error), after its log entry.
func New(o Options, apply Apply, log *zap.Logger, observe func(error)) (*Reloader, error) {
	if o.Interval <= 0 {
		// time.NewTicker would panic in Run, after the application started.
		return nil, fmt.Errorf("the reload interval of %s must be positive, got %v", o.Path, o.Interval)
	}
	if apply == nil {
		return nil, errors.New("filewatch: no Apply")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if observe == nil {
		observe = func(error) {}
	}
	return &Reloader{o: o, apply: apply, log: log, observe: observe, lastSum: sha256.Sum256(o.Current)}, nil
}

// Run rereads the file every interval until ctx ends.
func (r *Reloader) Run(ctx context.Context) {
	t := time.NewTicker(r.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Check()
		}
	}
}

// Check rereads the file once and applies it if it changed. Run calls it
// every interval; it must not be called concurrently with Run.
func (r *Reloader) Check() {
	data, err := os.ReadFile(r.o.Path)
	if err != nil {
		// Report a failure once, not on every poll while it lasts.
		if msg := err.Error(); msg != r.lastFailure {
			r.lastFailure = msg
			r.log.Error(r.o.Unreadable, zap.String("path", r.o.Path), zap.Error(err))
			r.observe(err)
		}
		return
	}
	sum := sha256.Sum256(data)
	switch sum {
	case r.lastSum: // unchanged, or back to the content in force
		r.failedSum, r.lastFailure = [sha256.Size]byte{}, ""
		return
	case r.failedSum: // the broken content already reported
		return
	}
	fields, err := r.apply(data)
	if err != nil {
		r.failedSum, r.lastFailure = sum, err.Error()
		r.log.Error(r.o.Refused, zap.String("path", r.o.Path), zap.Error(err))
		r.observe(err)
		return
	}
	r.lastSum, r.failedSum, r.lastFailure = sum, [sha256.Size]byte{}, ""
	r.log.Info(r.o.Reloaded, append([]zap.Field{zap.String("path", r.o.Path)}, fields...)...)
	r.observe(nil) // after the log, so that whoever is told finds the entry
}
