# SPDX-License-Identifier: Apache-2.0
# Debian packages: `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr gives
#   attnreg_<version>_<arch>.deb      libattnreg.so.0, the plugins, the shipped
#                                     INIs, the CLI, man pages, completion
#   attnreg-dev_<version>_<arch>.deb  headers, libattnreg.so, CMake package,
#                                     pkg-config files; depends on attnreg (=)
# Library dependencies (libc6, libinih1, libjansson4, ...) come from
# dpkg-shlibdeps. .ci/run builds, installs and uses them.
set(CPACK_PACKAGE_NAME attnreg)
set(CPACK_PACKAGE_VENDOR "attnreg")
set(ATTNREG_DEB_MAINTAINER "attnreg maintainers" CACHE STRING
    "Maintainer field of the Debian packages (Name <email>)")
set(CPACK_PACKAGE_CONTACT "${ATTNREG_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "attention-backend registry with a stable plugin ABI")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME attnreg)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# libattnreg opens libjansson.so.4 by soname to read config.json (no
# DT_NEEDED, so dpkg-shlibdeps cannot see it); the computed dependencies
# are appended to this.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libjansson4")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME attnreg-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "attnreg (= ${PROJECT_VERSION}), libinih-dev")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "attention-backend registry: library, CPU reference plugin, conf, attnreg command")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "attention-backend registry: headers, CMake package and pkg-config files")
# The CLI links libattnreg.so.0 from the same package: let dpkg-shlibdeps see it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${ATTNREG_OUT_LIB})
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
include(CPack)
