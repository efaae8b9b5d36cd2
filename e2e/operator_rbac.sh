# The operator's and the agent's least privilege, against a real API server (docs/operator.md,
# "What the operator may do"). Sourced by hack/suites/60-chart.sh after the fresh install of step
# 7, which defines ok, bad, $WORK, $HELM, $CHART and $KUBE_VERSION; kubectl talks to the API
# server of $KUBECONFIG. One function, operator_rbac_checks:
#  a. `kubectl auth can-i` as the installed chart's ServiceAccounts (release jd in namespace
#     jvm-diagnostics, workloads in lifecycle): the operator's Secret, Lease and webhook
#     registrations by name only, workloads patched but never created or deleted; the agent writes
#     nothing anywhere; a watch by name (metadata.name field selector) allowed, any other refused;
#  b. the chart's RBAC rendered for another release with operator.watchNamespaces and
#     namespaceOverride, applied alone (RBAC objects and ServiceAccount, in namespaces of its own):
#     workloads only in the watched namespace, the Secret in the override namespace; then deleted;
#  c. the installed ValidatingAdmissionPolicy, by server-side dry runs on a Deployment of its own
#     (rbac-probe in lifecycle, replicas 0, deleted afterwards): as the operator, an image or a
#     replicas change is denied naming the policy, the inject label and config-hash annotation
#     alone pass (set and removed, by server-side apply as the operator writes them); the same
#     image change by the administrator passes; an Event the operator may create elsewhere is
#     denied in kube-system, and its cluster-scoped webhook registration still takes its patch.
# The names can be changed for another install: RBAC_RELEASE (jd), RBAC_NS (jvm-diagnostics),
# RBAC_WORKLOAD_NS (lifecycle).
# shellcheck shell=bash disable=SC2015 # `test && ok … || bad …`: ok always returns 0

rbac_can() { kubectl auth can-i "$@" 2>/dev/null; }

# rbac_expect WANT DESCRIPTION CAN-I-ARGS...: one can-i answer, checked; prints the mismatch.
rbac_expect() {
  local want="$1" what="$2" got
  shift 2
  got=$(rbac_can "$@")
  [ "$got" = "$want" ] && return 0
  echo "       can-i $* -> ${got:-error}, want $want ($what)"
  return 1
}

operator_rbac_checks() {
  local rel="${RBAC_RELEASE:-jd}" ns="${RBAC_NS:-jvm-diagnostics}" lc="${RBAC_WORKLOAD_NS:-lifecycle}"
  local full="$rel-jvm-diagnostics"
  local osa="system:serviceaccount:$ns:$full-operator" asa="system:serviceaccount:$ns:$full-agent"
  local hook="$full-webhook" secret="$full-webhook-tls" lease="$full-operator"
  local miss out

  # --- a. the installed chart's ServiceAccounts -------------------------------------------------
  miss=0
  rbac_expect no "webhook registrations are Helm's to create" create mutatingwebhookconfigurations --as "$osa" || miss=1
  rbac_expect no "webhook registrations are Helm's to create" create validatingwebhookconfigurations --as "$osa" || miss=1
  rbac_expect no "another registration" patch mutatingwebhookconfigurations/other --as "$osa" || miss=1
  rbac_expect no "another registration" get validatingwebhookconfigurations/other --as "$osa" || miss=1
  rbac_expect no "registrations listed without a name" list mutatingwebhookconfigurations --as "$osa" || miss=1
  rbac_expect yes "its own registration's caBundle" patch "mutatingwebhookconfigurations/$hook" --as "$osa" || miss=1
  rbac_expect yes "its own registration's caBundle" patch "validatingwebhookconfigurations/$hook" --as "$osa" || miss=1
  rbac_expect yes "its own registration, watched by name" watch "validatingwebhookconfigurations/$hook" --as "$osa" || miss=1
  rbac_expect no "another Secret of its namespace" get secret/other -n "$ns" --as "$osa" || miss=1
  rbac_expect no "Secrets listed without a name" list secrets -n "$ns" --as "$osa" || miss=1
  rbac_expect no "Secrets of a workload namespace" get secrets -n "$lc" --as "$osa" || miss=1
  rbac_expect no "its Secret is never deleted" delete "secret/$secret" -n "$ns" --as "$osa" || miss=1
  rbac_expect yes "its webhook Secret" get "secret/$secret" -n "$ns" --as "$osa" || miss=1
  rbac_expect yes "its webhook Secret, rotated" update "secret/$secret" -n "$ns" --as "$osa" || miss=1
  rbac_expect yes "its webhook Secret, watched by name" list "secret/$secret" -n "$ns" --as "$osa" || miss=1
  rbac_expect yes "its Lease" update "leases.coordination.k8s.io/$lease" -n "$ns" --as "$osa" || miss=1
  rbac_expect no "another Lease" update leases.coordination.k8s.io/other -n "$ns" --as "$osa" || miss=1
  rbac_expect yes "workloads: the pod template's label and annotation" patch deployments -n "$lc" --as "$osa" || miss=1
  rbac_expect yes "workloads: the pod template's label and annotation" patch statefulsets -n "$lc" --as "$osa" || miss=1
  rbac_expect no "workloads are never deleted" delete deployments -n "$lc" --as "$osa" || miss=1
  rbac_expect no "workloads are never created" create deployments -n "$lc" --as "$osa" || miss=1
  rbac_expect no "workloads are never replaced" update daemonsets -n "$lc" --as "$osa" || miss=1
  rbac_expect no "workloads are never scaled" update deployments/scale -n "$lc" --as "$osa" || miss=1
  rbac_expect no "pods are only read" delete pods -n "$lc" --as "$osa" || miss=1
  rbac_expect no "JvmDiagnostics are the users'" create jvmdiagnostics.jvm.diagnostics.dev -n "$lc" --as "$osa" || miss=1
  rbac_expect yes "Events: a repeat counted up in the event it repeats" patch events -n "$lc" --as "$osa" || miss=1
  rbac_expect no "Events are never deleted" delete events -n "$lc" --as "$osa" || miss=1
  [ "$miss" = 0 ] && ok "operator ServiceAccount: its Secret, Lease and webhook registrations by name only, workloads patched but never created, deleted or scaled" \
    || bad "operator ServiceAccount: least privilege (can-i mismatches above)"
  # a real list+watch by name (what an informer on one object sends), and one for another name
  if kubectl --as "$osa" get --raw "/api/v1/namespaces/$ns/secrets?fieldSelector=metadata.name%3D$secret&watch=1&timeoutSeconds=1" >/dev/null 2>&1 \
     && kubectl --as "$osa" get --raw "/api/v1/namespaces/$ns/secrets?fieldSelector=metadata.name%3D$secret" >/dev/null 2>&1 \
     && kubectl --as "$osa" get --raw "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldSelector=metadata.name%3D$hook&watch=1&timeoutSeconds=1" >/dev/null 2>&1 \
     && ! kubectl --as "$osa" get --raw "/api/v1/namespaces/$ns/secrets?fieldSelector=metadata.name%3Dother&watch=1&timeoutSeconds=1" >/dev/null 2>&1 \
     && ! kubectl --as "$osa" get --raw "/api/v1/namespaces/$ns/secrets" >/dev/null 2>&1; then
    ok "operator ServiceAccount: list and watch its Secret and registration with a metadata.name field selector, nothing else"
  else
    bad "operator ServiceAccount: list/watch by metadata.name field selector" \
      "$(kubectl --as "$osa" get --raw "/api/v1/namespaces/$ns/secrets?fieldSelector=metadata.name%3D$secret" 2>&1 | head -c 300)"
  fi

  miss=0
  rbac_expect yes "its node's pods" watch pods --as "$asa" || miss=1
  rbac_expect yes "the resources' names" list jvmdiagnostics.jvm.diagnostics.dev --as "$asa" || miss=1
  rbac_expect no "a pod is never read by name" get pods -n "$lc" --as "$asa" || miss=1
  rbac_expect no "no Secrets" get secrets -n "$ns" --as "$asa" || miss=1
  # no write anywhere: every rule in both namespaces (and the cluster-wide ones) reads, but for the
  # reviews every identity may create (self*) and the metrics-auth questions (answers only)
  out=""
  for n in "$ns" "$lc"; do
    out+=$(kubectl auth can-i --list -n "$n" --as "$asa" 2>/dev/null \
      | awk 'NR > 1 && $1 !~ /^(selfsubject[a-z]*reviews|tokenreviews|subjectaccessreviews)\./ {
               match($0, /\[[^][]*\]$/); v = substr($0, RSTART)
               if (v ~ /create|update|patch|delete|escalate|bind|impersonate|\*/) print $1, v }')
  done
  [ -z "$out" ] || { echo "       writes: $out"; miss=1; }
  [ "$miss" = 0 ] && ok "agent ServiceAccount: lists and watches pods and JvmDiagnostics, writes nothing anywhere" \
    || bad "agent ServiceAccount: read-only (mismatches above)"

  # --- b. watchNamespaces and namespaceOverride, rendered for another release ---------------------
  local r2=rbacprobe o2=rbac-probe-ops w2=rbac-probe-watched u2=rbac-probe-unwatched
  local sa2="system:serviceaccount:$o2:$r2-jvm-diagnostics-operator" rendered="$WORK/rbac-probe.yaml"
  if "$HELM" template "$r2" "$CHART" -n "$ns" --kube-version "$KUBE_VERSION" \
       --set namespaceOverride="$o2" --set "operator.watchNamespaces={$w2}" \
       --show-only templates/operator/serviceaccount.yaml --show-only templates/operator/clusterrole.yaml \
       --show-only templates/operator/clusterrolebinding.yaml --show-only templates/operator/rolebinding.yaml \
       >"$rendered" 2>"$WORK/rbac-probe.err"; then
    for n in "$o2" "$w2" "$u2"; do
      # an earlier run's namespace may still be terminating
      for _ in $(seq 1 60); do [ -z "$(kubectl get namespace "$n" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ] && break; sleep 1; done
      kubectl create namespace "$n" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
    done
    if kubectl apply -f "$rendered" >"$WORK/rbac-probe.apply" 2>&1; then
      miss=0
      rbac_expect no "a system namespace is never watched" patch daemonsets -n kube-system --as "$sa2" || miss=1
      rbac_expect yes "the watched namespace" patch deployments -n "$w2" --as "$sa2" || miss=1
      rbac_expect yes "the watched namespace" list pods -n "$w2" --as "$sa2" || miss=1
      rbac_expect no "a namespace not watched" patch deployments -n "$u2" --as "$sa2" || miss=1
      rbac_expect no "a namespace not watched" list pods -n "$u2" --as "$sa2" || miss=1
      rbac_expect no "a namespace not watched" patch deployments -n "$lc" --as "$sa2" || miss=1
      rbac_expect yes "the resources are read everywhere (the webhook's cache)" list jvmdiagnostics.jvm.diagnostics.dev -A --as "$sa2" || miss=1
      rbac_expect yes "its Secret, in the override namespace" get "secret/$r2-jvm-diagnostics-webhook-tls" -n "$o2" --as "$sa2" || miss=1
      rbac_expect no "its Secret's name, elsewhere" get "secret/$r2-jvm-diagnostics-webhook-tls" -n "$ns" --as "$sa2" || miss=1
      rbac_expect yes "its Lease, in the override namespace" update "leases.coordination.k8s.io/$r2-jvm-diagnostics-operator" -n "$o2" --as "$sa2" || miss=1
      rbac_expect yes "its own Deployment (its own rollout)" get "deployments/$r2-jvm-diagnostics-operator" -n "$o2" --as "$sa2" || miss=1
      [ "$miss" = 0 ] && ok "watchNamespaces + namespaceOverride: workloads only in the watched namespace, Secret and Lease in the override namespace" \
        || bad "watchNamespaces + namespaceOverride RBAC (can-i mismatches above)"
    else
      bad "the RBAC rendered with watchNamespaces and namespaceOverride applies" "$(tail -n 3 "$WORK/rbac-probe.apply")"
    fi
    kubectl delete -f "$rendered" --ignore-not-found --wait=false >/dev/null 2>&1
    kubectl delete namespace "$o2" "$w2" "$u2" --ignore-not-found --wait=false >/dev/null 2>&1
  else
    bad "helm template with watchNamespaces and namespaceOverride" "$(head -c 300 "$WORK/rbac-probe.err")"
  fi

  # --- c. the ValidatingAdmissionPolicy ---------------------------------------------------------
  if ! kubectl get "validatingadmissionpolicies.admissionregistration.k8s.io/$full-operator-pod-template-only" >/dev/null 2>&1; then
    bad "the chart installed its ValidatingAdmissionPolicy $full-operator-pod-template-only"
    return 0
  fi
  local probe=rbac-probe policy="ValidatingAdmissionPolicy $full-operator-pod-template-only"
  local as=(--as "$osa") fm=--field-manager=jvmdiag-operator
  kubectl -n "$lc" delete deployment "$probe" --ignore-not-found --wait=true >/dev/null 2>&1
  if ! kubectl -n "$lc" create deployment "$probe" --image=jvmdiag/jdk25-base:dev --replicas=0 >"$WORK/rbac-probe-deploy.log" 2>&1; then
    bad "Deployment $lc/$probe for the admission policy checks" "$(cat "$WORK/rbac-probe-deploy.log")"
    return 0
  fi
  # a new policy binding takes a moment to be enforced: wait for the first denial
  local denied=""
  for _ in $(seq 1 20); do
    if out=$(kubectl "${as[@]}" -n "$lc" set image "deployment/$probe" "jdk25-base=jvmdiag/other:1" --dry-run=server 2>&1); then
      sleep 1
    else denied=1; break; fi
  done
  if [ -n "$denied" ] && grep -q "$policy" <<<"$out" && grep -q 'spec.template.spec' <<<"$out"; then
    ok "admission policy: the operator's image change is denied, naming the policy and spec.template.spec"
  else bad "admission policy: the operator's image change is denied" "${out:0:400}"; fi
  if out=$(kubectl "${as[@]}" -n "$lc" patch deployment "$probe" --dry-run=server -p '{"spec":{"replicas":3}}' 2>&1); then
    bad "admission policy: the operator's replicas change is denied" "allowed: $out"
  elif grep -q "$policy" <<<"$out" && grep -q 'spec.replicas' <<<"$out"; then
    ok "admission policy: the operator's replicas change is denied, naming spec.replicas"
  else bad "admission policy: the operator's replicas change is denied naming spec.replicas" "${out:0:400}"; fi
  if out=$(kubectl "${as[@]}" -n "$lc" patch deployment "$probe" --dry-run=server -p '{"metadata":{"labels":{"x":"y"}}}' 2>&1); then
    bad "admission policy: the operator's change of the workload's own labels is denied" "allowed: $out"
  else ok "admission policy: the operator's change of the workload's own labels is denied"; fi
  # what the operator writes: its label and annotation by server-side apply (dry run), then (for
  # real) set and removed again by applying an empty object
  local mark="$WORK/rbac-probe-mark.yaml" unmark="$WORK/rbac-probe-unmark.yaml"
  printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: %s}\nspec:\n  template:\n    metadata:\n      labels: {jvm.diagnostics.dev/inject: %s}\n      annotations: {jvm.diagnostics.dev/config-hash: rbac-probe}\n' \
    "$probe" "$lc" "$probe" >"$mark"
  printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: %s}\n' "$probe" "$lc" >"$unmark"
  if out=$(kubectl "${as[@]}" apply --server-side "$fm" --dry-run=server -f "$mark" 2>&1) \
     && out=$(kubectl "${as[@]}" apply --server-side "$fm" -f "$mark" 2>&1) \
     && [ "$(kubectl -n "$lc" get deployment "$probe" -o jsonpath='{.spec.template.metadata.annotations.jvm\.diagnostics\.dev/config-hash}')" = rbac-probe ] \
     && out=$(kubectl "${as[@]}" apply --server-side "$fm" -f "$unmark" 2>&1) \
     && [ -z "$(kubectl -n "$lc" get deployment "$probe" -o jsonpath='{.spec.template.metadata.labels.jvm\.diagnostics\.dev/inject}')" ]; then
    ok "admission policy: the operator's server-side apply of the inject label and config-hash annotation passes, and so does their removal"
  else bad "admission policy: the operator's label + annotation apply passes" "${out:0:400}"; fi
  if out=$(kubectl -n "$lc" set image "deployment/$probe" "jdk25-base=jvmdiag/other:1" --dry-run=server 2>&1); then
    ok "admission policy: the same image change by the administrator passes (the policy binds the operator only)"
  else bad "admission policy: the administrator's image change passes" "${out:0:400}"; fi
  # the system namespaces: nothing, whatever RBAC grants (Events are granted cluster-wide)
  if out=$(kubectl "${as[@]}" create --dry-run=server -f - 2>&1 <<EOF
apiVersion: v1
kind: Event
metadata: {name: rbac-probe, namespace: kube-system}
involvedObject: {kind: Pod, name: rbac-probe, namespace: kube-system}
reason: RbacProbe
message: rbac probe
EOF
  ); then
    bad "the operator writes nothing in kube-system (an Event)" "allowed: $out"
  elif grep -q "$full-operator-no-system-namespaces" <<<"$out"; then
    ok "the operator writes nothing in kube-system: an Event it may create elsewhere is denied by the admission policy"
  else bad "the operator's Event in kube-system is denied by the admission policy" "${out:0:400}"; fi
  # ...and a cluster-scoped object (no namespace) is not in one: its webhook registration's
  # caBundle apply passes both policies (a dry run of the label Helm set, unchanged)
  if out=$(kubectl "${as[@]}" patch mutatingwebhookconfiguration "$hook" --dry-run=server --type merge \
             -p "{\"metadata\":{\"labels\":{\"app.kubernetes.io/instance\":\"$rel\"}}}" 2>&1); then
    ok "the admission policies let the operator patch its cluster-scoped webhook registration"
  else bad "the operator patches its webhook registration (cluster-scoped) past the admission policies" "${out:0:400}"; fi
  kubectl -n "$lc" delete deployment "$probe" --ignore-not-found --wait=false >/dev/null 2>&1
  return 0
}
