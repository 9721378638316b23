# Every dependency comes from a Debian 12 package (see scripts/deps.sh and docs/building.md).
find_package(Boost 1.81 REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
find_path(RAPIDJSON_INCLUDE rapidjson/document.h REQUIRED)
find_path(VALIJSON_INCLUDE valijson/validator.hpp REQUIRED)
find_path(CLI11_INCLUDE CLI/CLI.hpp REQUIRED)

add_library(conform_deps INTERFACE)
# RapidJSON's CMake config only sets RAPIDJSON_INCLUDE_DIRS, so we make the interface target here.
# SYSTEM: third-party headers do not trip our -Werror.
target_include_directories(conform_deps SYSTEM INTERFACE
  ${RAPIDJSON_INCLUDE} ${VALIJSON_INCLUDE} ${CLI11_INCLUDE} ${Boost_INCLUDE_DIRS})
target_compile_definitions(conform_deps INTERFACE
  RAPIDJSON_HAS_STDSTRING=1 RAPIDJSON_HAS_CXX11_RVALUE_REFS=1
  BOOST_ASIO_NO_DEPRECATED=1
  # valijson: a bad schema must throw (caught in core/json/schema.cpp and turned into an error
  # value), never abort(); every TU must agree or the one-definition rule breaks.
  VALIJSON_USE_EXCEPTIONS=1)
# Boost.Process v2 is not used: on Debian 12 its sources need Boost.Filesystem 1.81, which is not
# packaged (only 1.74 is), so it does not link; children are spawned with posix_spawn in
# core/wire/channel.cpp (see the comment at its top). Boost.Asio does all child I/O and timers.
target_link_libraries(conform_deps INTERFACE fmt::fmt PkgConfig::PCRE2 Threads::Threads)
