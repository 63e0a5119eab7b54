# Runs a tierzero command line and checks its exit code and one line of its stderr, as a user sees them:
#   cmake -DCODE=<exit code> -DEXPECT=<regex on stderr> -DCOMMAND=<list> [-DSTDOUT=<file>] -P expect_exit.cmake
# STDOUT: where the command's standard output goes (e.g. /dev/full); default captured.
cmake_minimum_required(VERSION 3.25)
if(DEFINED STDOUT)
  execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_FILE ${STDOUT} ERROR_VARIABLE err TIMEOUT 120)
else()
  execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
endif()
if(NOT rc EQUAL CODE)
  message(FATAL_ERROR "exit code ${rc}, expected ${CODE}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "stderr does not match '${EXPECT}':\n${err}")
endif()
message(STATUS "exit code ${rc}: ${err}")
