# shellcheck shell=bash
# A token of the JWT scenario's service account (25-jwt.sh), minted before
# the other scenarios: the API server issues none shorter than 10 minutes,
# and 25-jwt.sh presents one past its expiry after the last scenario;
# minted here, it has expired by then without the run waiting for it.

JWT_NS=jwt
stage "JWT callers: a service account's token for audience plantstore, minted now for its expiry at the end"
restricted_ns "$JWT_NS"
kubectl create serviceaccount -n "$JWT_NS" orders >/dev/null
kubectl create token -n "$JWT_NS" orders --audience plantstore --duration 10m >"$CLUSTER_DIR/jwt-early-token"
