# coact_warnings(target): the project's warning set; -Werror when COACT_WERROR (CI).
function(coact_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-interference-size)
  if(COACT_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
