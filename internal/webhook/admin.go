package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/plant"
	"github.com/plantstore/plantstore/internal/server"
	"github.com/plantstore/plantstore/internal/store"
)

// deadLetterView is a dead letter as the admin endpoint lists it.
type deadLetterView struct {
	ID         string    `json:"id"`
	Failed     time.Time `json:"failed"`
	WebhookID  string    `json:"webhook_id"`
	Type       string    `json:"type"`
	PlantID    int64     `json:"plant_id"`
	EventTime  time.Time `json:"event_time"`
	Subscriber string    `json:"subscriber"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error"`
}

// maxListed bounds one listing of dead letters.
const maxListed = 1000

// AdminRoutes are the operator's endpoints on the admin listener:
//
//	GET  /admin/webhooks/dead-letters[?limit=N]   the oldest N (default 100, at most 1000), JSON
//	POST /admin/webhooks/dead-letters/replay[?id=ID&id=ID...]
//	     makes the named dead letters (every one without id) due again as
//	     first attempts; answers {"replayed": n}
func AdminRoutes(outbox store.Outbox, subs *Subscribers, log *zap.Logger) []server.AdminRoute {
	return []server.AdminRoute{
		{Pattern: "GET /admin/webhooks/dead-letters", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			limit := 100
			if s := r.URL.Query().Get("limit"); s != "" {
				n, err := strconv.Atoi(s)
				if err != nil || n < 1 || n > maxListed {
					http.Error(w, "limit must be an integer from 1 to 1000", http.StatusBadRequest)
					return
				}
				limit = n
			}
			dead, err := outbox.DeadLetters(r.Context(), limit)
			if err != nil {
				adminError(w, log, "listing dead letters", err)
				return
			}
			out := make([]deadLetterView, len(dead))
			for i, d := range dead {
				name := d.Subscriber
				if sub, ok := subs.ByKey(d.Subscriber); ok {
					name = sub.Name
				}
				out[i] = deadLetterView{ID: d.ID, Failed: d.Failed.UTC(), WebhookID: d.Event.ID, Type: d.Event.Type,
					PlantID: d.Event.Plant.ID, EventTime: d.Event.Time, Subscriber: name, Attempts: d.Attempt, LastError: d.LastError}
			}
			writeJSON(w, out)
		})},
		{Pattern: "POST /admin/webhooks/dead-letters/replay", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ids := r.URL.Query()["id"]
			n, err := outbox.Replay(r.Context(), ids)
			if err != nil {
				adminError(w, log, "replaying dead letters", err)
				return
			}
			log.Info("dead letters replayed by an operator", zap.Int("replayed", n), zap.Strings("ids", ids))
			writeJSON(w, map[string]int{"replayed": n})
		})},
	}
}

func adminError(w http.ResponseWriter, log *zap.Logger, what string, err error) {
	log.Error(what+" failed", zap.Error(err))
	status := http.StatusInternalServerError
	if errors.Is(err, plant.ErrUnavailable) {
		status = http.StatusServiceUnavailable
	}
	http.Error(w, what+" failed: "+err.Error(), status)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
