# bench/common/caf.cmake: finding CAF, and building a whole-program benchmark
# group (bench/peers, bench/timers) as its pair of programs. Included by each
# group's CMakeLists.txt; include_guard makes the second include a no-op (the
# finds are cached).
#
#   coact_bench_programs(GROUP)
#     coact-GROUP  from coact_GROUP.cpp, linked with coact::runtime;
#     caf-GROUP    from caf_GROUP.cpp, against CAF 0.17 (Debian's libcaf-dev),
#                  only when CAF is found (else a status message naming
#                  `scripts/bench.sh GROUP`).
#     Both get bench/common on their include path, what bench_support.hpp uses
#     (CLI11, nlohmann-json, fmt, Threads) and the project's warnings. Sets
#     COACT_BENCH_RUNTIMES in the caller's scope: `coact caf`, or `coact`.
#
# CAF ships no CMake config: find_path/find_library. scripts/bench.sh reads
# the cache entries CAF_INCLUDE_DIR and CAF_CORE_LIBRARY (NOTFOUND: CAF was
# missing at configure time), so keep those names.
include_guard(GLOBAL)

find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)

# coact_bench_program(TARGET SOURCE): one program of a group.
function(coact_bench_program target source)
  add_executable(${target} ${source})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  target_link_libraries(${target} PRIVATE CLI11::CLI11 nlohmann_json::nlohmann_json fmt::fmt Threads::Threads)
  coact_warnings(${target})
endfunction()

function(coact_bench_programs group)
  coact_bench_program(coact-${group} coact_${group}.cpp)
  target_link_libraries(coact-${group} PRIVATE coact::runtime)
  if(CAF_INCLUDE_DIR AND CAF_CORE_LIBRARY)
    coact_bench_program(caf-${group} caf_${group}.cpp)
    target_include_directories(caf-${group} SYSTEM PRIVATE ${CAF_INCLUDE_DIR})
    target_link_libraries(caf-${group} PRIVATE ${CAF_CORE_LIBRARY})
    set(COACT_BENCH_RUNTIMES coact caf PARENT_SCOPE)
  else()
    message(STATUS "coact: CAF (caf/all.hpp, libcaf_core) not found; skipping caf-${group} "
                   "(install libcaf-dev for `scripts/bench.sh ${group}`)")
    set(COACT_BENCH_RUNTIMES coact PARENT_SCOPE)
  endif()
endfunction()
