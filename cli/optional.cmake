# SPDX-License-Identifier: Apache-2.0
# Extra sources and libraries of `attnreg run` / `attnreg verify` (included
# by cli/CMakeLists.txt after the attnreg_cli target exists).
#   attnreg_npy      .npy reader/writer (tools/npy)
#   attnreg_oracle   float64 reference, metrics, random problems (tests/cpu_ref)
#   run_support.c    memory in the backend's space (host, or CUDA/HIP opened
#                    with dlopen at run time, so nothing GPU is linked)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/cmd_run.c OR EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/cmd_verify.c)
  target_sources(attnreg_cli PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/run_support.c)
  target_link_libraries(attnreg_cli PRIVATE attnreg_npy attnreg_oracle attnreg_dtype_conv
                        attnreg_tool_error ${CMAKE_DL_LIBS})
endif()
