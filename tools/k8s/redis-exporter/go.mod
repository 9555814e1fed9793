module github.com/plantstore/plantstore/tools/k8s/redis-exporter

go 1.26

tool github.com/oliver006/redis_exporter

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/gomodule/redigo v1.9.2 // indirect
	github.com/mna/redisc v1.4.0 // indirect
	github.com/oliver006/redis_exporter v1.61.0 // indirect
	github.com/prometheus/client_golang v1.19.1 // indirect
	github.com/prometheus/client_model v0.6.1 // indirect
	github.com/prometheus/common v0.48.0 // indirect
	github.com/prometheus/procfs v0.12.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/sys v0.17.0 // indirect
	google.golang.org/protobuf v1.33.0 // indirect
)
