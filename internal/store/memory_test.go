package store_test

import (
	"testing"

	"github.com/plantstore/plantstore/internal/store"
	"github.com/plantstore/plantstore/internal/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Repository { return store.NewMemory() })
}
