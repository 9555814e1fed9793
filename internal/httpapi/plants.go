package httpapi

import (
	"bytes"
	"context"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/plant"
)

// PlantCreator is what the create handler needs of a store.
type PlantCreator interface {
	Create(ctx context.Context, p plant.Plant) (plant.Plant, plant.Outcome, error)
}

// CreateObserver is told the outcome of every creation that reached the
// store; telemetry counts them. It may be nil.
type CreateObserver func(outcome string)

// CreatePlantHandler serves POST /plants.
type CreatePlantHandler struct {
	store        PlantCreator
	storeTimeout time.Duration
	log          *zap.Logger
	observe      CreateObserver
}

// NewCreatePlantHandler returns the handler of POST /plants. Every store call
// is bounded by storeTimeout, so a slow store yields 503, never a hung request.
func NewCreatePlantHandler(store PlantCreator, storeTimeout time.Duration, log *zap.Logger, observe CreateObserver) *CreatePlantHandler {
	if observe == nil {
		observe = func(string) {}
	}
	return &CreatePlantHandler{store: store, storeTimeout: storeTimeout, log: log, observe: observe}
}

type plantBody struct {
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

func (h *CreatePlantHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e := checkContentType(r.Header.Get("Content-Type")); e != nil {
		apierror.Write(w, e)
		return
	}
	body, e := readBody(w, r)
	if e != nil {
		apierror.Write(w, e)
		return
	}
	p, e := DecodeNewPlant(body.Bytes())
	body.release() // the plant holds copies of what it needs
	if e != nil {
		apierror.Write(w, e)
		return
	}

	// The store timeout alone bounds the create, not the client: a create
	// that has started runs to its end even if the client hangs up, so that
	// what is stored does not depend on when a connection dropped. It is also
	// cheaper: a context detached from the request's does not register with
	// it, or unregister, on every request (docs/performance.md).
	ctx, cancel := storeContext(r, h.storeTimeout)
	defer cancel()
	stored, outcome, err := h.store.Create(ctx, p)
	switch {
	case err == nil:
		h.observe(outcome.String())
	case errors.Is(err, plant.ErrConflict):
		h.observe("conflict")
		apierror.Write(w, apierror.New(apierror.IDTaken,
			"id "+strconv.FormatInt(p.ID, 10)+" is already taken by a plant with a different name or tag"))
		return
	default:
		writeStoreError(w, r, h.log, "creating plant", err)
		return
	}

	apierror.WriteJSON(w, http.StatusOK, plantBody{Name: stored.Name, Tag: stored.Tag})
}

// writeStoreError answers a store failure: 503 with Retry-After when the
// store is unavailable (the client may retry), 507 without one when it is
// full (waiting does not help: an operator must act), 500 otherwise.
func writeStoreError(w http.ResponseWriter, r *http.Request, log *zap.Logger, what string, err error) {
	if errors.Is(err, plant.ErrFull) {
		log.Warn("plant store full", append(logFields(r.Context()), zap.String("operation", what), zap.Error(err))...)
		apierror.Write(w, apierror.New(apierror.StoreFull,
			"the plant store is full: nothing was stored; an operator must free memory or raise its limit"))
		return
	}
	if errors.Is(err, plant.ErrUnavailable) {
		log.Warn("plant store unavailable", append(logFields(r.Context()), zap.String("operation", what), zap.Error(err))...)
		w.Header().Set("Retry-After", "1")
		apierror.Write(w, apierror.New(apierror.StoreUnavailable,
			"the plant store is unavailable or did not answer in time; retry later"))
		return
	}
	log.Error(what+" failed", append(logFields(r.Context()), zap.Error(err))...)
	apierror.Write(w, apierror.New(apierror.Internal, "internal error"))
}

// storeContext bounds one store operation by timeout alone, detached from
// the request's cancellation: see CreatePlantHandler.ServeHTTP.
func storeContext(r *http.Request, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
}

// checkContentType accepts application/json with at most a charset=utf-8
// parameter, both matched case-insensitively.
func checkContentType(value string) *apierror.Error {
	if value == "" {
		return apierror.New(apierror.UnsupportedMedia, "Content-Type is missing: send application/json")
	}
	if strings.EqualFold(value, "application/json") || strings.EqualFold(value, "application/json; charset=utf-8") {
		return nil // the usual forms, without parsing
	}
	mt, params, err := mime.ParseMediaType(value)
	if err != nil || mt != "application/json" {
		return apierror.New(apierror.UnsupportedMedia, "Content-Type must be application/json")
	}
	for k, v := range params { // ParseMediaType lower-cases the names
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return apierror.New(apierror.UnsupportedMedia,
				"Content-Type application/json takes only the parameter charset=utf-8")
		}
	}
	return nil
}

// readBody reads at most MaxBodyBytes into a buffer of bodies; a larger
// body is refused without reading it all. The caller releases the buffer
// once done with its bytes.
func readBody(w http.ResponseWriter, r *http.Request) (*bodyBuffer, *apierror.Error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, errBodyTooLarge()
	}
	b := bodies.Get().(*bodyBuffer)
	if _, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes)); err != nil {
		b.release()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errBodyTooLarge()
		}
		return nil, apierror.New(apierror.MalformedJSON, "could not read the request body")
	}
	return b, nil
}

// bodyBuffer holds a request body while it is decoded, and is then reused:
// io.ReadAll's growing slices were a share of every create's allocations
// (docs/performance.md).
type bodyBuffer struct{ bytes.Buffer }

// bodies are the bodyBuffers not in use; one that grew past 4 KiB (a large
// body, at most MaxBodyBytes) is left to the collector instead.
var bodies = sync.Pool{New: func() any { return new(bodyBuffer) }}

func (b *bodyBuffer) release() {
	if b.Cap() > 4<<10 {
		return
	}
	b.Reset()
	bodies.Put(b)
}

func errBodyTooLarge() *apierror.Error {
	return apierror.New(apierror.BodyTooLarge, "request body is larger than "+strconv.Itoa(MaxBodyBytes)+" bytes")
}

// Options configure the API handlers.
type Options struct {
	// StoreTimeout bounds each request's store operation.
	StoreTimeout time.Duration
	// DocsPage serves the API reference page, GET /docs, and its files;
	// off, those paths answer 404 as any unknown path.
	DocsPage bool
}
