# Install rules of the LMC package: what an out-of-tree pass plugin needs
# (examples/count-ops-pass, docs/writing-a-pass.md).
#   bin/                lmc, lm-opt, lmrt
#   lib/                libMLIRLMDialect.so, libMLIRLMPasses.so
#   include/            dialect/IR/*.h, passes/Passes.h and their .inc files
#   lib/cmake/LMC/      LMCConfig.cmake, LMCConfigVersion.cmake, LMCTargets.cmake
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LMC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/LMC")

# Installed binaries find LMC's libraries next to them and libMLIR.so where
# Debian puts it.
set(_lmc_install_rpath "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
set_target_properties(lmc lm-opt lmrt MLIRLMDialect MLIRLMPasses PROPERTIES
  INSTALL_RPATH "${_lmc_install_rpath}")

set_target_properties(MLIRLMDialect PROPERTIES EXPORT_NAME Dialect)
set_target_properties(MLIRLMPasses PROPERTIES EXPORT_NAME Passes)
target_include_directories(MLIRLMDialect INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

install(TARGETS MLIRLMDialect MLIRLMPasses
  EXPORT LMCTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS lmc lm-opt lmrt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# lmrt dlopens the SentencePiece plugin from the lib/ folder beside its bin/.
install(TARGETS lmrt_sentencepiece LIBRARY DESTINATION lib)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/dialect/IR/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dialect/IR
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td" PATTERN "GradientRules" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/dialect/IR/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dialect/IR
  FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/passes/Passes.h ${PROJECT_SOURCE_DIR}/passes/Passes.td
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/passes)
install(FILES ${PROJECT_BINARY_DIR}/passes/Passes.h.inc
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/passes)

install(EXPORT LMCTargets NAMESPACE LMC:: DESTINATION ${LMC_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/LMCConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/LMCConfig.cmake
  INSTALL_DESTINATION ${LMC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/LMCConfigVersion.cmake
  VERSION 0.1 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/LMCConfig.cmake ${PROJECT_BINARY_DIR}/cmake/LMCConfigVersion.cmake
  DESTINATION ${LMC_INSTALL_CMAKEDIR})
