#!/usr/bin/env bash
# Creates the two Secrets the gateway base mounts for mutual TLS between the
# agents and the gateway, from a new CA (openssl, ECDSA P-256):
#   otelcol-nexovue-gateway-tls  the gateway's server certificate (both
#                                Services' names) + the CA (verifies agents)
#   otelcol-nexovue-agent-tls    the agents' client certificate
#                                (clientAuth) + the CA (verifies the gateway)
# each of type kubernetes.io/tls with tls.crt, tls.key and ca.crt. The CA's
# key is not kept: to renew (the leaf certificates last 365 days), run it
# again; the collectors re-read the files once the kubelet has updated them
# (within about a minute, each pod on its own: meanwhile an agent whose
# side is not yet updated fails to send, and keeps its profiles in its
# queue until it can).
#
#   distributions/kubernetes/gateway/create-tls-secrets.sh [namespace] [cluster domain]
#
# (defaults nexovue-profiling and cluster.local), with kubectl's current
# context, before or after `kubectl apply -k distributions/kubernetes/gateway`.
# The namespace must exist. The private keys go from a temporary folder,
# removed at exit, to the API server only.
set -euo pipefail

ns=${1:-nexovue-profiling}
domain=${2:-cluster.local}
days=${TLS_DAYS:-365}
ca_days=${TLS_CA_DAYS:-3650}
gw=otelcol-nexovue-gateway
agent=otelcol-nexovue-agent

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
umask 077

sans=""
for svc in "$gw-headless" "$gw"; do
	for name in "$svc" "$svc.$ns" "$svc.$ns.svc" "$svc.$ns.svc.$domain"; do
		sans="$sans${sans:+,}DNS:$name"
	done
done

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$ca_days" \
	-subj "/CN=otelcol-nexovue-ca" -keyout ca.key -out ca.crt \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

leaf() { # name, common name, extensions
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
		-keyout "$1.key" -out "$1.csr" 2>/dev/null
	printf '%s\n' "$3" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days "$days" \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
	kubectl -n "$ns" create secret generic "$1-tls" --type=kubernetes.io/tls \
		--from-file=tls.crt="$1.crt" --from-file=tls.key="$1.key" --from-file=ca.crt=ca.crt \
		--dry-run=client -o yaml | kubectl apply -f - >/dev/null
	echo "Secret $ns/$1-tls: $2"
}
leaf "$gw" "$gw-headless.$ns.svc" "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s' "$sans")"
leaf "$agent" "$agent" "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth')"
