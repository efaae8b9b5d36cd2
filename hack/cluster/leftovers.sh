# What a local cluster instance leaves on the host (network links, iptables chains), minus
# what other instances own; sourced by the suites that check `down` (cluster, demo).
# Needs hack/lib.sh (CLUSTER_DIR, BRIDGE, CNI_NETWORK).

# A developer's cluster may start or stop while a suite runs: after `down`, none of ours may
# have been added.
other_kubelets() {
  local pf
  for pf in "$JVMDIAG_CACHE"/cluster*/run/kubelet.pid; do
    [ -f "$pf" ] && [ "${pf%/run/kubelet.pid}" != "$CLUSTER_DIR" ] && kill -0 "$(cat "$pf")" 2>/dev/null && return 0
  done
  return 1
}
# Other instances seen at any point: their down may have left the shared chains to ours,
# or ours to theirs, so those are only compared when we ran alone throughout.
SEEN_OTHERS=0
note_others() { other_kubelets && SEEN_OTHERS=1; return 0; }
chains() {
  local shared=0; note_others; [ "$SEEN_OTHERS" = 1 ] && shared=1
  { iptables-save; echo "*ip6"; ip6tables-save; } 2>/dev/null | python3 -c '
import re, sys
mine, shared = sys.argv[1], sys.argv[2] == "1"
text = sys.stdin.read()
# CNI chains belong to the network named in their rules (or in the rules jumping to them).
owner = {}
for m in re.finditer(r"name: \\?\"(jvmdiag\d)\\?\".*?-j (CNI-(?:DN-)?[0-9a-f]{24})", text):
    owner[m.group(2)] = m.group(1)
for line in text.splitlines():
    if line.startswith("*"):
        table = line
    if not line.startswith(":"):
        continue
    chain, policy = line[1:].split()[:2]
    if policy != "-":  # a built-in chain: there since the table was first used, never removed
        continue
    m = re.match(r"JVMDIAG(\d)-", chain)
    if m and "jvmdiag" + m.group(1) != mine:
        continue
    if chain in owner and owner[chain] != mine:
        continue
    if shared and re.match(r"(KUBE-|CNI-HOSTPORT-)", chain):
        continue
    # An empty, unreferenced CNI chain names no network: while other instances run it may
    # be theirs (down removes such chains only when it runs alone).
    if shared and re.fullmatch(r"CNI-(DN-)?[0-9a-f]{24}", chain) and not re.search(r"(^-A %s |-j %s( |$))" % (chain, chain), text, re.M):
        continue
    print(table, chain)
' "$CNI_NETWORK" "$shared" | sort
}
links() {
  ip -o link show | awk -F': ' -v mine="$BRIDGE" '{
    name = $2; sub(/@.*/, "", name)
    if (name ~ /^jvmdiag[0-9]$/ && name != mine) next
    if (match($0, / master jvmdiag[0-9] /) && substr($0, RSTART + 8, 8) != mine) next
    print name }' | sort
}
# added BEFORE AFTER: the lines only in AFTER (printed), false if there are any.
added() { local extra; extra=$(comm -13 "$1" "$2"); [ -z "$extra" ] || { echo "$extra" | sed 's/^/       added: /'; return 1; }; }
