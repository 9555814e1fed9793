package store

// BatchQueued is the number of commands waiting in b's queue, for the tests
// that need a batch to form before Redis answers.
func BatchQueued(b *Batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}
