# SPDX-License-Identifier: Apache-2.0
# gpu_backend.cmake — resolves ATTNREG_GPU and enables the GPU language.
# Include it from the TOP-LEVEL CMakeLists.txt (before add_subdirectory of
# plugins, tests and bench): a language enabled in a subdirectory is not
# usable from its siblings (tests/gpu, bench/gpu).
#
#   ATTNREG_GPU = auto | cuda | hip | off
#     auto: nvcc found -> cuda (CMAKE_CUDA_ARCHITECTURES, default 90a: sm_90
#           with its arch-specific wgmma, which the MTP kernel uses; the
#           binary then runs on sm_90 devices only);
#           else a HIP compiler -> hip (CMAKE_HIP_ARCHITECTURES, default
#           gfx942;gfx950); else off.
# Sets ATTNREG_GPU_BACKEND (cuda|hip|off), ATTNREG_GPU_ARCHS (the arch
# names the kernels are built for: sm_90, gfx942, ...; 90a is named sm_90)
# and ATTNREG_CUDA_SM90A (ON when the CUDA arch list has 90a).
include(CheckLanguage)

set(_gpu "${ATTNREG_GPU}")
# STREQUAL, not if(NOT ...): "off" is itself a false constant in CMake.
if(_gpu STREQUAL "")
  set(_gpu auto)
endif()
if(_gpu STREQUAL "auto")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_gpu cuda)
  else()
    check_language(HIP)
    if(CMAKE_HIP_COMPILER)
      set(_gpu hip)
    else()
      set(_gpu off)
    endif()
  endif()
endif()
if(NOT _gpu MATCHES "^(cuda|hip|off)$")
  message(FATAL_ERROR "ATTNREG_GPU must be auto, cuda, hip or off (got '${ATTNREG_GPU}')")
endif()
set(ATTNREG_GPU_BACKEND ${_gpu})
message(STATUS "attnreg GPU kernels: ${_gpu}")

set(ATTNREG_GPU_ARCHS "")
if(_gpu STREQUAL "cuda")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    # 90a (sm_90 with wgmma) needs CUDA 12; older toolkits get plain 90,
    # where the MTP kernel runs its mma.sync variant only.
    set(CMAKE_CUDA_ARCHITECTURES 90a)
    if(CMAKE_CUDA_COMPILER)
      execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE _nvcc_version
                      ERROR_QUIET)
      if(_nvcc_version MATCHES "release ([0-9]+)\\." AND CMAKE_MATCH_1 LESS 12)
        set(CMAKE_CUDA_ARCHITECTURES 90)
        message(STATUS "attnreg: nvcc ${CMAKE_MATCH_1}.x has no sm_90a: building for 90")
      endif()
    endif()
  endif()
  # cudart linked statically: a plugin built against the shared cudart fails
  # to dlopen where CUDA is absent; the static one loads and says "no device".
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(ATTNREG_CUDA_SM90A OFF)
  if("90a" IN_LIST CMAKE_CUDA_ARCHITECTURES)
    set(ATTNREG_CUDA_SM90A ON)
  endif()
  foreach(a ${CMAKE_CUDA_ARCHITECTURES})
    string(REGEX REPLACE "^([0-9]+).*$" "sm_\\1" n "${a}")
    list(APPEND ATTNREG_GPU_ARCHS ${n})
  endforeach()
elseif(_gpu STREQUAL "hip")
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES OR CMAKE_HIP_ARCHITECTURES STREQUAL "")
    set(CMAKE_HIP_ARCHITECTURES gfx942 gfx950)
  endif()
  enable_language(HIP)
  set(ATTNREG_GPU_ARCHS ${CMAKE_HIP_ARCHITECTURES})
endif()
list(REMOVE_DUPLICATES ATTNREG_GPU_ARCHS)
