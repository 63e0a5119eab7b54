# The cluster in a box (scripts/cluster.sh): real hosts as network namespaces on this machine. Labels
# `cluster` and `mpi`: the Release pass runs them, the sanitizer pass (-LE "mpi|slow") does not. They
# share the testbed's fixed names, so they run one at a time (RESOURCE_LOCK), each bringing the testbed
# up and down itself (a testbed left up by hand is taken down). COST 1000 makes CTest start them first:
# they mostly wait (links, timeouts, Slurm), so as one chain from the start the other tests fill the cores
# beside them, where a chain started midway would outlast everything else. Where the machine cannot host it (not
# root, no network namespaces) each exits 77 with one line saying why: skipped, not passed.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(TZ_CLUSTER_SH ${PROJECT_SOURCE_DIR}/scripts/cluster.sh)
set(TZ_CLUSTER_DIR ${CMAKE_BINARY_DIR}/cluster-tests)
add_test(NAME cluster_up_down COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/up_down_test.sh ${TZ_CLUSTER_SH})
add_test(NAME cluster_shaped_bandwidth COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/bandwidth_test.sh ${TZ_CLUSTER_SH}
         ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/tcp_stream.py 300 2)
# Every preset on 2 hosts x 2 ranks; three (the quantized one among them) on 4 hosts x 2 ranks.
set(TZ_CLUSTER_TRAIN bash ${CMAKE_CURRENT_LIST_DIR}/train_across_hosts_test.sh ${TZ_CLUSTER_SH}
    $<TARGET_FILE:tierzero> ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/checkpoint/compare_metrics.py
    ${CMAKE_CURRENT_LIST_DIR}/topology_pairs.json)
add_test(NAME cluster_mpi_train_2x2 COMMAND ${TZ_CLUSTER_TRAIN} 2 2 ${TZ_CLUSTER_DIR}/2x2
         ddp zero1 zero2 zero3 zeropp mics hsdp three-level)
add_test(NAME cluster_mpi_train_4x2 COMMAND ${TZ_CLUSTER_TRAIN} 4 2 ${TZ_CLUSTER_DIR}/4x2 zero3 zeropp three-level)
set_tests_properties(cluster_up_down cluster_shaped_bandwidth cluster_mpi_train_2x2 cluster_mpi_train_4x2 PROPERTIES
  LABELS "cluster;mpi" TIMEOUT 300 RESOURCE_LOCK tzc_testbed COST 1000 SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "(^|\n)PASS")
# tierzero under Slurm: a local Slurm of the test's own (scripts/slurm.sh: munged, slurmctld, one slurmd
# in each of 2 testbed hosts), 4 ranks under `srun --mpi=pmix`: hostnames, bitwise against mpirun,
# `scancel --signal=TERM` saving the stopped step, `--resume` under srun. Skipped (77) where Slurm or
# munge is not installed.
add_test(NAME cluster_slurm_train COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/slurm_train_test.sh
         ${PROJECT_SOURCE_DIR}/scripts/slurm.sh ${TZ_CLUSTER_SH} $<TARGET_FILE:tierzero> ${Python3_EXECUTABLE}
         ${PROJECT_SOURCE_DIR}/tests/checkpoint/compare_metrics.py ${CMAKE_CURRENT_LIST_DIR}/topology_pairs.json
         ${TZ_CLUSTER_DIR}/slurm)
set_tests_properties(cluster_slurm_train PROPERTIES LABELS "cluster;mpi" TIMEOUT 180 RESOURCE_LOCK tzc_testbed COST 1000
  SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "(^|\n)PASS")
# The calibration pipeline across hosts (scripts/calibrate_cluster.sh, short): bench comm across 4 hosts
# x 2 ranks, the calibrated topology, the prediction beside the measured step of zero3 and three-level.
# The model is not yet within 20% across hosts (docs/cluster.md: +81% to +189% measured): the bound
# here, 400%, catches a broken pipeline (a missing tier, a prediction off by orders), not the model's
# accuracy; the curves per tier and the bytes per step equal to the plan's are checked exactly.
add_test(NAME cluster_mpi_calibrated_prediction COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/calibrated_prediction_test.sh
         ${PROJECT_SOURCE_DIR}/scripts/calibrate_cluster.sh $<TARGET_FILE:tierzero> ${TZ_CLUSTER_DIR}/calibrated 400)
set_tests_properties(cluster_mpi_calibrated_prediction PROPERTIES
  LABELS "cluster;mpi" TIMEOUT 300 RESOURCE_LOCK tzc_testbed COST 1000 SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "(^|\n)PASS")
# A whole host lost (kill -9, link down, SIGSTOP) while 4 hosts x 2 ranks train: the live ranks' agreed
# line, their exit, what is left, then the resume on the 3 remaining hosts (docs/faults.md); launched by
# mpirun (cluster_mpi_host_fault_*), and the kill also by Slurm's srun (cluster_slurm_host_fault_kill,
# which also requires srun to end by itself; skipped where Slurm is not installed). An srun run takes
# about 80 s (Slurm holds the live nodes about 24 s after a node is lost), so CI runs the one fault
# under srun; the others run by hand with LAUNCHER srun (docs/faults.md, "Faults of a host").
set(TZ_HOST_FAULT bash ${CMAKE_CURRENT_LIST_DIR}/host_faults_test.sh ${TZ_CLUSTER_SH} $<TARGET_FILE:tierzero>
    ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/checkpoint/compare_metrics.py
    ${PROJECT_SOURCE_DIR}/tests/fixtures/topology_four_ranks.json)
foreach(fault kill link_down stop)
  string(REPLACE "link_down" "link" arg ${fault})
  add_test(NAME cluster_mpi_host_fault_${fault}
           COMMAND ${TZ_HOST_FAULT} ${TZ_CLUSTER_DIR}/host_fault_${fault} ${arg} mpirun)
endforeach()
add_test(NAME cluster_slurm_host_fault_kill COMMAND ${TZ_HOST_FAULT} ${TZ_CLUSTER_DIR}/slurm_host_fault_kill kill srun)
set_tests_properties(cluster_mpi_host_fault_kill cluster_mpi_host_fault_link_down cluster_mpi_host_fault_stop
  cluster_slurm_host_fault_kill PROPERTIES LABELS "cluster;mpi" TIMEOUT 300 RESOURCE_LOCK tzc_testbed COST 1000
  SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "(^|\n)PASS")
