package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/apierror"
	"github.com/plantstore/plantstore/internal/plant"
)

// PlantLister is what the list handler needs of a store.
type PlantLister interface {
	List(ctx context.Context, after *int64, limit int) (plant.Page, error)
}

// ListPlantsHandler serves GET /plants: pages in id order, each linking to
// the next with Link: <...>; rel="next" (RFC 8288) carrying an opaque cursor.
type ListPlantsHandler struct {
	store        PlantLister
	storeTimeout time.Duration
	log          *zap.Logger
}

// NewListPlantsHandler returns the handler of GET /plants; every store call
// is bounded by storeTimeout.
func NewListPlantsHandler(store PlantLister, storeTimeout time.Duration, log *zap.Logger) *ListPlantsHandler {
	return &ListPlantsHandler{store: store, storeTimeout: storeTimeout, log: log}
}

func (h *ListPlantsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	limit, e := parseLimit(query)
	if e != nil {
		apierror.Write(w, e)
		return
	}
	var after *int64
	if values, ok := query["cursor"]; ok {
		id, err := DecodeCursor(values[0])
		if err != nil {
			apierror.Write(w, apierror.New(apierror.BadCursor,
				"cursor is not one this service issued: follow the Link rel=\"next\" of the previous page, or leave cursor out for the first page"))
			return
		}
		after = &id
	}
	ctx, cancel := storeContext(r, h.storeTimeout)
	defer cancel()
	page, err := h.store.List(ctx, after, limit)
	if err != nil {
		writeStoreError(w, r, h.log, "listing plants", err)
		return
	}
	body := make([]storedPlantBody, len(page.Plants))
	for i, p := range page.Plants {
		body[i] = bodyOf(p)
	}
	if page.More {
		next := url.Values{"limit": {strconv.Itoa(limit)}, "cursor": {EncodeCursor(page.Cursor)}}
		w.Header().Set("Link", "</plants?"+next.Encode()+`>; rel="next"`)
	}
	apierror.WriteJSON(w, http.StatusOK, body)
}

// parseLimit reads limit: absent means the default; anything but a decimal
// integer from MinPageLimit to MaxPageLimit is 40008. When a parameter is
// repeated, the first value counts.
func parseLimit(query url.Values) (int, *apierror.Error) {
	values, ok := query["limit"]
	if !ok {
		return plant.DefaultPageLimit, nil
	}
	n, err := strconv.Atoi(values[0])
	if err != nil || n < plant.MinPageLimit || n > plant.MaxPageLimit {
		return 0, apierror.New(apierror.BadLimit, "limit must be an integer from "+
			strconv.Itoa(plant.MinPageLimit)+" to "+strconv.Itoa(plant.MaxPageLimit)+", got "+strconv.Quote(truncate(values[0], 40)))
	}
	return n, nil
}
