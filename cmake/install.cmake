# Install rules and package config: `find_package(reshard)` then link `reshard::reshard`
# (DESIGN §3). Installs the core libraries (typesys, interp, synth; Abseil is their only
# heavy dependency), their headers under include/reshard/<folder>/, the `reshard` CLI, and
# lib/cmake/reshard/reshard{Config,ConfigVersion,Targets}.cmake.
include(CMakePackageConfigHelpers)

set(RESHARD_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/reshard"
    CACHE STRING "Where reshardConfig.cmake is installed, relative to the prefix")

# The umbrella target. The CLI owns the name `reshard`, so the target is reshard_all and
# only its export name is `reshard`.
add_library(reshard_all INTERFACE)
add_library(reshard::reshard ALIAS reshard_all)
target_link_libraries(reshard_all INTERFACE reshard_typesys reshard_interp reshard_synth)
# The public headers use C++20 (defaulted comparisons); consumers need at least that.
target_compile_features(reshard_all INTERFACE cxx_std_20)
set_target_properties(reshard_all PROPERTIES EXPORT_NAME reshard)
foreach(component typesys interp synth)
  set_target_properties(reshard_${component} PROPERTIES EXPORT_NAME ${component})
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/${component}/"
          DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/reshard/${component}"
          FILES_MATCHING PATTERN "*.h")
endforeach()

install(TARGETS reshard_typesys reshard_interp reshard_synth reshard_all
        EXPORT reshardTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(TARGETS reshard RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

install(EXPORT reshardTargets
        NAMESPACE reshard::
        FILE reshardTargets.cmake
        DESTINATION "${RESHARD_INSTALL_CMAKEDIR}")

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/reshardConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/reshardConfig.cmake"
  INSTALL_DESTINATION "${RESHARD_INSTALL_CMAKEDIR}")
# 0.x: minor versions may break the API.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/reshardConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/reshardConfig.cmake"
              "${PROJECT_BINARY_DIR}/reshardConfigVersion.cmake"
        DESTINATION "${RESHARD_INSTALL_CMAKEDIR}")
