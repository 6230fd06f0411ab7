# coact_warnings(target): the project's warning set; -Werror when COACT_WERROR (CI).
function(coact_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-interference-size)
  # GCC 12 at -O3 (the Release build scripts/run.sh uses) warns -Wrestrict
  # inside libstdc++'s std::string operator+ for any `"literal" + std::string`
  # (a false positive, GCC PR 105329): pages of noise in the README's main
  # command, none of it about our code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(COACT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
