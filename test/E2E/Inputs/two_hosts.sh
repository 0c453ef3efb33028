#!/bin/sh
# Runs `mpirun -np 2 ARGS...` with its two ranks on two "hosts": two network
# namespaces of this machine joined by a veth pair (10.77.0.1 and 10.77.0.2, a
# LAN of two machines), Open MPI's rsh launcher reaching each through `ip netns
# exec` instead of ssh, and the ranks talking TCP over the veth (btl tcp,self: no
# shared memory between them). The multi-node path of docs/distributed.md
# without a second machine. Needs root and network namespaces (lit feature
# "netns"). The namespaces and the veth pair are removed on exit.
# Usage: two_hosts.sh ARGS...   (what follows `mpirun -np 2`)
set -eu
id=$$
a=lmca$id
b=lmcb$id
dir=$(mktemp -d)
cleanup() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
ip netns add "$a"
ip netns add "$b"
ip link add "va$id" type veth peer name "vb$id"
ip link set "va$id" netns "$a"
ip link set "vb$id" netns "$b"
ip netns exec "$a" ip addr add 10.77.0.1/24 dev "va$id"
ip netns exec "$b" ip addr add 10.77.0.2/24 dev "vb$id"
for ns in "$a" "$b"; do
  ip netns exec "$ns" ip link set lo up
done
ip netns exec "$a" ip link set "va$id" up
ip netns exec "$b" ip link set "vb$id" up
# The launcher's "remote shell": the host is an address; its namespace runs the command.
cat > "$dir/agent" <<EOF
#!/bin/sh
host=\$1
shift
case "\$host" in
  10.77.0.1) exec ip netns exec $a sh -c "\$*" ;;
  10.77.0.2) exec ip netns exec $b sh -c "\$*" ;;
esac
echo "two_hosts agent: unknown host \$host" >&2
exit 1
EOF
chmod +x "$dir/agent"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' > "$dir/hosts"
# Both "hosts" share this machine's file system: the session directories of mpirun and
# of the second host's orted go under $dir/ompi, not the $TMPDIR/ompi.<host>.<uid>
# other tests' mpiruns create and remove at the same time (test/lit.cfg.py, %mpirun).
ip netns exec "$a" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  mpirun -np 2 --hostfile "$dir/hosts" --bind-to none --mca plm_rsh_agent "$dir/agent" \
  --mca orte_tmpdir_base "$dir/ompi" \
  --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 "$@"
