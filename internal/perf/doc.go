// Package perf holds the service's benchmarks. They compose the real
// handler chain from its packages, so they live apart from any one of them.
package perf
