# The layering of src/ (scripts/check_layers.py): the tree passes, and the checker catches an
# include against the layering (plan/ including a comm/ header) and a command-line file including
# <mpi.h> (MPI is reached through comm/), each in a scratch tree.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME layers_check COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py)
set(TZ_BAD_TREE ${CMAKE_BINARY_DIR}/layers-bad-tree)
file(WRITE ${TZ_BAD_TREE}/plan/bad.hpp "#include \"comm/mesh.hpp\"\n")
file(WRITE ${TZ_BAD_TREE}/comm/mesh.hpp "#include \"core/error.hpp\"\n")
add_test(NAME layers_check_catches_violation
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py --root ${TZ_BAD_TREE})
set_tests_properties(layers_check_catches_violation PROPERTIES PASS_REGULAR_EXPRESSION
  "src/plan/bad.hpp:1: plan may not include comm/mesh.hpp")
set(TZ_MPI_IN_CLI_TREE ${CMAKE_BINARY_DIR}/layers-mpi-in-cli-tree)
file(WRITE ${TZ_MPI_IN_CLI_TREE}/cli/world.cpp "#include <fmt/format.h>\n  #  include <mpi.h>\n")
file(WRITE ${TZ_MPI_IN_CLI_TREE}/comm/mpi_mesh.cpp "#include <mpi.h>\n")
add_test(NAME layers_check_catches_mpi_in_cli
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py --root ${TZ_MPI_IN_CLI_TREE})
set_tests_properties(layers_check_catches_mpi_in_cli PROPERTIES
  PASS_REGULAR_EXPRESSION "src/cli/world.cpp:2: cli may not include <mpi.h>"
  FAIL_REGULAR_EXPRESSION "comm/mpi_mesh.cpp")
set_tests_properties(layers_check layers_check_catches_violation layers_check_catches_mpi_in_cli PROPERTIES
  LABELS layers TIMEOUT 60)
