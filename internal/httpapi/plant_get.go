package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/plant"
)

// PlantGetter is what the read handler needs of a store.
type PlantGetter interface {
	Get(ctx context.Context, id int64) (plant.Plant, error)
}

// storedPlantBody is a plant as reads and lists answer it: with its id.
type storedPlantBody struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

func bodyOf(p plant.Plant) storedPlantBody {
	return storedPlantBody{ID: p.ID, Name: p.Name, Tag: p.Tag}
}

// GetPlantHandler serves GET /plants/{id}.
type GetPlantHandler struct {
	store        PlantGetter
	storeTimeout time.Duration
	log          *zap.Logger
}

// NewGetPlantHandler returns the handler of GET /plants/{id}; every store
// call is bounded by storeTimeout.
func NewGetPlantHandler(store PlantGetter, storeTimeout time.Duration, log *zap.Logger) *GetPlantHandler {
	return &GetPlantHandler{store: store, storeTimeout: storeTimeout, log: log}
}

func (h *GetPlantHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, e := ParsePlantID(r.PathValue("id"))
	if e != nil {
		apierror.Write(w, e)
		return
	}
	// Bounded by the store timeout alone, as every store call: a client that
	// hangs up does not turn into a store failure in the logs and metrics.
	ctx, cancel := storeContext(r, h.storeTimeout)
	defer cancel()
	p, err := h.store.Get(ctx, id)
	switch {
	case err == nil:
		apierror.WriteJSON(w, http.StatusOK, bodyOf(p))
	case errors.Is(err, plant.ErrNotFound):
		writePlantNotFound(w, id)
	default:
		writeStoreError(w, r, h.log, "reading plant", err)
	}
}

func writePlantNotFound(w http.ResponseWriter, id int64) {
	apierror.Write(w, apierror.New(apierror.PlantNotFound, "no plant has id "+strconv.FormatInt(id, 10)))
}
