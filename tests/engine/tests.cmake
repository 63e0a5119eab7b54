# Long engine runs (hundreds of training steps): their own binary, labelled `slow`, so the
# sanitizer pass (which runs everything else) skips them; the Release pass runs them.
file(GLOB TZ_ENGINE_SLOW_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_slowtest.cpp)
add_executable(tz_engine_slow_tests ${TZ_ENGINE_SLOW_TESTS})
target_link_libraries(tz_engine_slow_tests PRIVATE tierzero_core tierzero_mpi GTest::gtest GTest::gtest_main)
gtest_discover_tests(tz_engine_slow_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 900 LABELS "engine;slow")
