# shellcheck shell=bash
# Sourced by the cluster tests that launch with srun, once the testbed (scripts/cluster.sh) is up:
#   slurm_up SLURM_SH
# starts the local Slurm (scripts/slurm.sh up --cpus 2: one slurmd per testbed host), exits 77 (skipped)
# where Slurm cannot run here, calls the test's `fail` when it does not start, and exports what srun and
# the ranks it starts need: SLURM_CONF, and Open MPI's transports between them (shared memory within a
# host, TCP on the testbed's bridge, TZC_SUBNET). The caller takes Slurm down on exit.
slurm_up() {
  local out rc subnet=${TZC_SUBNET:-10.213.47}
  out=$(bash "$1" up --cpus 2 2>&1)
  rc=$?
  echo "$out"
  [ $rc -ne 77 ] || { echo "SKIP: $out"; exit 77; }
  [ $rc -eq 0 ] || fail "slurm.sh up exited $rc"
  export "$(bash "$1" env)"
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_vader_single_copy_mechanism=none \
    OMPI_MCA_btl_tcp_if_include=$subnet.0/24 OMPI_MCA_oob_tcp_if_include=$subnet.0/24
}
