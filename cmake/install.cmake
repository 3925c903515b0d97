# SPDX-License-Identifier: Apache-2.0
# What a consumer of an installed attnreg finds, all relocatable (no path of
# the build machine is written into any of these files):
#   <libdir>/cmake/attnreg/   attnregConfig.cmake, its version file, the
#                             exported targets and attnreg_add_plugin()
#   <libdir>/pkgconfig/       attnreg.pc (hosts), attnreg-plugin.pc (plugins)
#   <mandir>/man1, man5       attnreg(1), attnreg.conf(5)
#   <datadir>/attnreg/attnreg.schema.json   the JSON schema of every --json
#                             document (and of the Python package's dicts)
#   <datadir>/bash-completion/completions/attnreg
#   <docdir>/LICENSE
include(CMakePackageConfigHelpers)

set(ATTNREG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnreg)
install(EXPORT attnregTargets NAMESPACE attnreg:: DESTINATION ${ATTNREG_CMAKE_DIR}
        FILE attnregTargets.cmake COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attnregConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/attnregConfig.cmake
  INSTALL_DESTINATION ${ATTNREG_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_DATADIR)
# Any 0.x from the version asked for on: the ABI is append-only (attnreg.h),
# so a host built against 0.2 or 0.3 runs on 0.4.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/attnregConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/attnregConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/attnregConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/attnregPlugin.cmake
        DESTINATION ${ATTNREG_CMAKE_DIR} COMPONENT dev)

# pkg-config: ${pcfiledir} keeps the files relocatable.
set(ATTNREG_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH ATTNREG_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${ATTNREG_PC_DIR}
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" ATTNREG_PC_TO_PREFIX "${ATTNREG_PC_TO_PREFIX}")
foreach(pc attnreg attnreg-plugin)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc
                 @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${ATTNREG_PC_DIR}
          COMPONENT dev)
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/docs/man/attnreg.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/docs/man/attnreg.conf.5
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${PROJECT_SOURCE_DIR}/docs/attnreg.schema.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/attnreg)
install(FILES ${PROJECT_SOURCE_DIR}/scripts/attnreg.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME attnreg)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The administrator's conf folder, searched before the shipped one (empty;
# the runtime package owns it). Relative to the prefix when it lies inside it,
# so `cmake --install --prefix` and DESTDIR honour it; /etc for a /usr prefix.
string(FIND "${CMAKE_INSTALL_FULL_SYSCONFDIR}/" "${CMAKE_INSTALL_PREFIX}/" attnreg_sysconf_in_prefix)
if(attnreg_sysconf_in_prefix EQUAL 0)
  install(DIRECTORY DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/attnreg/conf.d)
else()
  install(DIRECTORY DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/attnreg/conf.d)
endif()
