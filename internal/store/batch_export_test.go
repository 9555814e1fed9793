package store

// BatchQueued is the number of commands waiting in b's queue, for the tests
// that need a batch to form before Redis answers.
func BatchQueued(b *Batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// BatchSending is the number of b's sends in flight, or places handed to a
// queued caller that has not sent yet.
func BatchSending(b *Batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.senders
}
