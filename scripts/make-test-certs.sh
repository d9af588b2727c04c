#!/usr/bin/env bash
# Generates throwaway certificates for TLS tests into DIR (EC P-256 keys, valid ten years):
#   ca.crt ca.key                  the cluster CA
#   node-a.crt node-a.key          node certificates signed by the cluster CA, with the
#   node-b.crt node-b.key          subjectAltName IP:127.0.0.1 and DNS:localhost
#   rogue-ca.crt rogue-ca.key      a CA the cluster does not trust
#   rogue-node.crt rogue-node.key  a node certificate signed by the rogue CA
# Quiet unless openssl fails. Idempotent: a DIR that already holds a complete set is left as it
# is. Never use these files outside tests: the keys are unencrypted.
#
#   scripts/make-test-certs.sh DIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
dir="$1"
files=(ca.crt ca.key node-a.crt node-a.key node-b.crt node-b.key
       rogue-ca.crt rogue-ca.key rogue-node.crt rogue-node.key)

complete() {
  local f
  for f in "${files[@]}"; do
    [[ -s "$dir/$f" ]] || return 1
  done
}
if complete; then
  exit 0
fi

mkdir -p "$dir"
# Build in a private directory and move the files in at the end, so that an interrupted run
# never leaves a set that looks complete.
work="$(mktemp -d "$dir/.make-test-certs.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cat >"$work/ca.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF

cat >"$work/node.cnf" <<'EOF'
[node_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

# quiet COMMAND...: runs openssl's chatter into a log that is shown only when it fails.
quiet() {
  if ! "$@" >"$work/log" 2>&1; then
    cat "$work/log" >&2
    exit 1
  fi
}

# make_ca NAME: a self-signed CA certificate and its key.
make_ca() {
  quiet openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -config "$work/ca.cnf" -extensions ca_ext -subj "/CN=troupe test $1" -days 3650 \
    -keyout "$work/$1.key" -out "$work/$1.crt"
}

# make_node NAME CA: a key and a certificate for NAME signed by CA.
make_node() {
  quiet openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=$1" -keyout "$work/$1.key" -out "$work/$1.csr"
  quiet openssl x509 -req -in "$work/$1.csr" -CA "$work/$2.crt" -CAkey "$work/$2.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -sha256 \
    -extfile "$work/node.cnf" -extensions node_ext -out "$work/$1.crt"
}

make_ca ca
make_node node-a ca
make_node node-b ca
make_ca rogue-ca
make_node rogue-node rogue-ca

for f in "${files[@]}"; do
  mv -f "$work/$f" "$dir/$f"
done
