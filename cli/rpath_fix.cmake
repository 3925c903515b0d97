# SPDX-License-Identifier: Apache-2.0
# Run after attnreg_cli links (cmake -P, from cli/CMakeLists.txt):
#   -DBUILT=<the build tree's attnreg> -DINSTALL_COPY=<the copy to install>
#   -DINSTALL_RPATH=<its RUNPATH once installed>
# CMake links the build tree's binary with its RUNPATH padded by ':' so that
# the install RUNPATH can be written over it in place; the trailing empty
# element that leaves means the current directory (a build-tree attnreg run
# from a folder holding a libm.so.6 loaded it). So the installed program is a
# copy made here with the install RUNPATH, and the build tree's keeps only
# its non-empty elements.
file(READ_ELF "${BUILT}" RUNPATH old CAPTURE_ERROR err)
if(err)
  message(FATAL_ERROR "rpath_fix: ${BUILT}: ${err}")
endif()
# READ_ELF hands the RUNPATH back as a list (its ':' turned into ';').
string(REPLACE ";" ":" old "${old}")
file(COPY_FILE "${BUILT}" "${INSTALL_COPY}")
file(RPATH_CHANGE FILE "${INSTALL_COPY}" OLD_RPATH "${old}" NEW_RPATH "${INSTALL_RPATH}")
string(REPLACE ":" ";" elems "${old}")
list(REMOVE_ITEM elems "")
list(JOIN elems ":" kept)
if(NOT kept STREQUAL old)
  file(RPATH_CHANGE FILE "${BUILT}" OLD_RPATH "${old}" NEW_RPATH "${kept}")
endif()
