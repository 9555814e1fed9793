// Package redisscripts holds the tests of the chart's Redis scripts
// (charts/plantstore/files/redis) against real redis-servers and Sentinels
// on loopback: find-master.sh as a pod's server restarts, switchover.sh as
// the master's pod is drained. Their branches that real Sentinels cannot be
// made to take at will, and the chart's rendering of them, are tested
// against fakes in tools/k8s/chart.
package redisscripts
