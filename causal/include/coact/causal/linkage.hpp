// coact/causal/linkage.hpp: COACT_CAUSAL_LOCAL, the linkage of the globals
// that every dispatch reads (the sweep flag, the live slot word, G, the
// handler-region cache t_fast).
//
// When coact::causal is a static library (COACT_CAUSAL_STATIC, set by
// causal/CMakeLists.txt; the default build), the program and the library
// are one module, so these globals are declared hidden (COACT_CAUSAL_LOCAL):
// the compiler knows they bind locally and reads each with one PC-relative
// load instead of through the GOT (the build is -fPIC: a `lea` the linker
// relaxed from the GOT load, plus the load). The thread-local cache t_fast
// also gets the initial-exec TLS model (COACT_CAUSAL_LOCAL_TLS): -fPIC's
// default for it is general-dynamic, a __tls_get_addr call the linker relaxes
// away in an executable but around which the compiler has already spilled
// caller-saved registers. Together they take the GOT load and the TLS call
// off every handler run during a sweep.
// Initial-exec TLS lives in the static TLS block: a static coact::causal is
// for linking into a program or a library loaded at start, not into a
// plugin that is dlopen()ed late (glibc may then refuse it: "cannot allocate
// memory in static TLS block"). A shared coact::causal (BUILD_SHARED_LIBS=ON)
// gets neither attribute; that build is not exercised by CI.
#pragma once

#if defined(COACT_CAUSAL_STATIC) && COACT_CAUSAL_STATIC && (defined(__GNUC__) || defined(__clang__))
#define COACT_CAUSAL_LOCAL [[gnu::visibility("hidden")]]
#define COACT_CAUSAL_LOCAL_TLS [[gnu::visibility("hidden"), gnu::tls_model("initial-exec")]]
#else
#define COACT_CAUSAL_LOCAL
#define COACT_CAUSAL_LOCAL_TLS
#endif
