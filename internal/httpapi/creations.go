package httpapi

import "github.com/prometheus/client_golang/prometheus"

// CreationCounter counts plant creations by outcome: created, replayed
// (the same plant again) and conflict (the id taken by another plant).
type CreationCounter struct {
	byOutcome map[string]prometheus.Counter
}

// NewCreationCounter registers plantstore_plant_creations_total on reg, with
// every outcome present from the start so that rates begin at zero.
func NewCreationCounter(reg prometheus.Registerer) (*CreationCounter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "plantstore", Name: "plant_creations_total",
		Help: "Plant creations that reached the store, by outcome: created, replayed (same plant again), conflict (id taken by another plant).",
	}, []string{"outcome"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	c := &CreationCounter{byOutcome: make(map[string]prometheus.Counter)}
	for _, o := range []string{"created", "replayed", "conflict"} {
		c.byOutcome[o] = vec.WithLabelValues(o)
	}
	return c, nil
}

// Observe counts one creation; it is the handler's CreateObserver.
func (c *CreationCounter) Observe(outcome string) {
	if counter, ok := c.byOutcome[outcome]; ok {
		counter.Inc()
	}
}
