# Links every LMC target against Debian's one shared MLIR (libMLIR.so) instead
# of the static MLIR component libraries (libMLIRIR.a, ...).
#
# Why: a pass plugin loaded into lmc or lm-opt must see the same MLIR as the
# tool (one pass registry, one TypeID per class, one set of command-line
# options); two copies of MLIR in one process break all three. The tools hold
# no MLIR code of their own (lmc 7.1 -> 1.4 MB, lm-opt 5.6 -> 0.6 MB); with GNU
# ld, linking against the 66 MB library is slower than linking the few static
# components, hence lld when installed (top-level CMakeLists.txt), with which
# linking is faster than before. MLIR 19 has no MLIR_LINK_MLIR_DYLIB switch (it
# came with 20), so lmc_use_mlir_dylib() rewrites, after every target is
# declared, each link item that names an imported static MLIR component (with
# or without $<LINK_ONLY:...>) to the imported `MLIR` dylib plus `LLVM`. The
# CMakeLists files keep naming components (MLIRIR, MLIRPass, ...) as usual,
# which also documents what each library uses. TableGen backends (tools that
# link MLIRTableGen/MLIRTblgenLib) are left static.
include_guard(GLOBAL)

# Sets `out` to `item` with an imported static MLIR component replaced.
function(_lmc_mlir_dylib_item item out)
  set(result "${item}")
  set(name "${item}")
  set(wrap "")
  if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
    set(name "${CMAKE_MATCH_1}")
    set(wrap LINK_ONLY)
  endif()
  # Not in libMLIR.so: TableGen, PDLL, the LSP servers, test and C API libraries.
  if(name MATCHES "^MLIR." AND NOT name MATCHES "^MLIR(TableGen|TblgenLib|PDLL|LspServer|Test|CAPI)"
     AND TARGET "${name}")
    get_target_property(imported "${name}" IMPORTED)
    get_target_property(type "${name}" TYPE)
    if(imported AND type STREQUAL "STATIC_LIBRARY")
      if(wrap)
        set(result "$<LINK_ONLY:MLIR>;$<LINK_ONLY:LLVM>")
      else()
        set(result "MLIR;LLVM")
      endif()
    endif()
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(_lmc_mlir_dylib_property target property)
  get_target_property(items "${target}" ${property})
  if(NOT items)
    return()
  endif()
  set(rewritten "")
  foreach(item IN LISTS items)
    _lmc_mlir_dylib_item("${item}" replaced)
    list(APPEND rewritten ${replaced})
  endforeach()
  list(REMOVE_DUPLICATES rewritten)
  set_property(TARGET "${target}" PROPERTY ${property} "${rewritten}")
endfunction()

function(_lmc_mlir_dylib_directory dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    # A TableGen backend links LLVM's and MLIR's TableGen libraries statically
    # (with their own LLVMSupport): it must stay entirely static.
    get_target_property(direct "${target}" LINK_LIBRARIES)
    if(direct MATCHES "(MLIRTableGen|MLIRTblgenLib|LLVMTableGen)")
      continue()
    endif()
    get_target_property(type "${target}" TYPE)
    if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      _lmc_mlir_dylib_property("${target}" LINK_LIBRARIES)
    endif()
    if(NOT type STREQUAL "UTILITY")
      _lmc_mlir_dylib_property("${target}" INTERFACE_LINK_LIBRARIES)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _lmc_mlir_dylib_directory("${subdir}")
  endforeach()
endfunction()

# Call once, at the end of the top-level CMakeLists.txt.
function(lmc_use_mlir_dylib)
  if(NOT TARGET MLIR)
    message(FATAL_ERROR "LMC needs MLIR built with libMLIR.so (imported target MLIR), as Debian's is")
  endif()
  _lmc_mlir_dylib_directory("${PROJECT_SOURCE_DIR}")
endfunction()
