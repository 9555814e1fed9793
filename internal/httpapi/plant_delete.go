package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/plant"
)

// PlantDeleter is what the delete handler needs of a store.
type PlantDeleter interface {
	Delete(ctx context.Context, id int64) error
}

// DeletePlantHandler serves DELETE /plants/{id}.
type DeletePlantHandler struct {
	store        PlantDeleter
	storeTimeout time.Duration
	log          *zap.Logger
}

// NewDeletePlantHandler returns the handler of DELETE /plants/{id}; every
// store call is bounded by storeTimeout.
func NewDeletePlantHandler(store PlantDeleter, storeTimeout time.Duration, log *zap.Logger) *DeletePlantHandler {
	return &DeletePlantHandler{store: store, storeTimeout: storeTimeout, log: log}
}

func (h *DeletePlantHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, e := ParsePlantID(r.PathValue("id"))
	if e != nil {
		apierror.Write(w, e)
		return
	}
	// Like a create, a delete that has started runs to its end even if the
	// client hangs up.
	ctx, cancel := storeContext(r, h.storeTimeout)
	defer cancel()
	switch err := h.store.Delete(ctx, id); {
	case err == nil:
		w.Header()["Cache-Control"] = []string{"no-store"}
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, plant.ErrNotFound):
		writePlantNotFound(w, id)
	default:
		writeStoreError(w, r, h.log, "deleting plant", err)
	}
}
