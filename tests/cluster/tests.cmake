# The cluster in a box (scripts/cluster.sh): real hosts as network namespaces on this machine. Labels
# `cluster` and `mpi`: the Release pass runs them, the sanitizer pass (-LE "mpi|slow") does not. They
# share the testbed's fixed names, so they run one at a time (RESOURCE_LOCK), each bringing the testbed
# up and down itself (a testbed left up by hand is taken down). Where the machine cannot host it (not
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
  LABELS "cluster;mpi" TIMEOUT 300 RESOURCE_LOCK tzc_testbed SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "(^|\n)PASS")
