# SPDX-License-Identifier: Apache-2.0
# Stages the Python package with a copy of this build's libattnreg, shipped
# plugins and conf beside it, as `pip install ./python` does from a build:
#   cmake -DSRC=<repo>/python -DBUILD=<build dir> -DDEST=<dir> -P stage.cmake
# gives DEST/attnreg/*.py and DEST/attnreg/_bundled/{lib/libattnreg.so.0,
# lib/attnreg/*.so, share/attnreg/conf/*.ini} (the prefix layout, so the
# library finds its conf folder and the INIs their plugins as installed).
file(REMOVE_RECURSE ${DEST}/attnreg)
file(GLOB py_files ${SRC}/attnreg/*.py)
file(COPY ${py_files} DESTINATION ${DEST}/attnreg)
set(native ${DEST}/attnreg/_bundled)
# The soname as a plain file (a wheel and the device carry keep no symlinks).
file(REAL_PATH ${BUILD}/lib/libattnreg.so.0 lib_real)
file(MAKE_DIRECTORY ${native}/lib/attnreg ${native}/share/attnreg/conf)
configure_file(${lib_real} ${native}/lib/libattnreg.so.0 COPYONLY)
# The plugins and the out-of-process probe's helper (attnreg-probe).
file(GLOB plugins ${BUILD}/lib/attnreg/*.so ${BUILD}/lib/attnreg/attnreg-probe)
file(COPY ${plugins} DESTINATION ${native}/lib/attnreg)
file(GLOB confs ${BUILD}/share/attnreg/conf/*.ini)
file(COPY ${confs} DESTINATION ${native}/share/attnreg/conf)
