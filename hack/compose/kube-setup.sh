#!/bin/sh
# kube-setup: the one-shot job of docker-compose.yaml that prepares the k3s
# cluster for the orchestrator. It installs the CRDs (deploy/crds), the
# orchestrator's RBAC (each process's roles generated into deploy/rbac, and
# the namespace, ServiceAccounts and bindings of deploy/manager) and the
# samples (deploy/samples), then writes /kube/worker and /kube/starter,
# kubeconfigs that authenticate as each process's ServiceAccount. The worker
# and the starter read their own, so locally they have exactly the
# permissions they have when deployed.
#
# Runs in the rancher/k3s image (kubectl and a busybox shell) once k3s is
# healthy, with k3s' admin kubeconfig at /k3s/k3s.yaml, deploy/ at /deploy
# and the shared kubeconfig volume at /kube. Idempotent: each `docker
# compose up` runs it again, re-applies the manifests (edits of the samples
# made with kubectl are overwritten) and issues a fresh token.
#
# Environment, for running it elsewhere (deploy/deploy_test.go runs it
# against the test API server):
#   ADMIN_KUBECONFIG  an admin kubeconfig; default /k3s/k3s.yaml
#   KUBE_SERVER       the API server's URL as the orchestrator reaches it;
#                     default https://k3s:6443, empty: the admin kubeconfig's
#   DEPLOY_DIR        the repository's deploy/; default /deploy
#   KUBECONFIG_DIR    where to write the kubeconfigs worker and starter;
#                     default /kube
set -eu

admin_kubeconfig=${ADMIN_KUBECONFIG:-/k3s/k3s.yaml}
server=${KUBE_SERVER-https://k3s:6443}
deploy=${DEPLOY_DIR:-/deploy}
out_dir=${KUBECONFIG_DIR:-/kube}
if [ -z "$server" ]; then
  server=$(kubectl --kubeconfig="$admin_kubeconfig" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
fi
admin() { kubectl --kubeconfig="$admin_kubeconfig" --server="$server" "$@"; }

echo "waiting for the API server at $server"
i=0
until admin get --raw=/readyz >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -ge 120 ]; then
    admin get --raw=/readyz
    exit 1
  fi
  sleep 2
done

echo "installing the CRDs"
admin apply --server-side --force-conflicts -f "$deploy/crds"
admin wait --for=condition=Established --timeout=120s -f "$deploy/crds"

echo "installing the orchestrator's RBAC"
admin apply --server-side --force-conflicts \
  -f "$deploy/manager/namespace.yaml" \
  -f "$deploy/manager/serviceaccount.yaml" \
  -f "$deploy/rbac/worker/role.yaml" \
  -f "$deploy/rbac/starter/role.yaml" \
  -f "$deploy/manager/clusterrolebinding.yaml" \
  -f "$deploy/manager/rolebinding.yaml"

echo "installing the samples"
admin apply --server-side --force-conflicts -f "$deploy/samples"

ca=$(admin config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
for process in worker starter; do
  sa=ate-orchestrator-$process
  out=$out_dir/$process
  echo "writing $out for serviceaccount ate-system/$sa"
  token=$(admin --namespace=ate-system create token "$sa" --duration=8760h)
  kubectl config --kubeconfig="$out" set-cluster k3s --server="$server"
  kubectl config --kubeconfig="$out" set clusters.k3s.certificate-authority-data "$ca"
  kubectl config --kubeconfig="$out" set-credentials "$sa" --token="$token"
  kubectl config --kubeconfig="$out" set-context "$sa" --cluster=k3s --user="$sa"
  kubectl config --kubeconfig="$out" use-context "$sa"
  # The worker and the starter run as uid 65532; kubectl writes 0600.
  chmod 0644 "$out"
  kubectl --kubeconfig="$out" auth can-i list workerpools.ate.dev --all-namespaces
done
echo "the cluster is ready"
