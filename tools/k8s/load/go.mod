// k8s-load, the test cluster's load generator: a module of its own because
// its -retries mode sends through the service's generated Go client
// (api/client), and requiring the service's module would move the versions
// of the Kubernetes build in tools/k8s.
module github.com/plantstore/plantstore/tools/k8s/load

go 1.26.0

require (
	github.com/plantstore/plantstore v0.0.0-00010101000000-000000000000
	github.com/tsenart/vegeta/v12 v12.13.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/oapi-codegen/runtime v1.8.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/rs/dnscache v0.0.0-20230804202142-fc85eb664529 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/plantstore/plantstore => ../../..
